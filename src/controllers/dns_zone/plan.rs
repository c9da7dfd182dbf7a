//! What a DNSZone's round writes, decided from the zone Designate shows. Pure.

use verda_api::v1alpha1::DnsZoneSpec;

use crate::cloud::ids::DnsZoneId;
use crate::cloud::model::dns::{CreateZone, DnsZone, UpdateZone};

/// The zone the object stands for, as `observe` found it.
#[derive(Clone, Debug, PartialEq)]
pub enum Found {
    /// The project has no zone of the spec's name: one is to be made.
    None,
    /// The object's zone: it carries the object's owner record, or it is the zone
    /// `spec.import` names (the owner record is written first thing).
    Zone(DnsZone),
}

impl Found {
    pub fn zone(&self) -> Option<&DnsZone> {
        match self {
            Found::Zone(zone) => Some(zone),
            Found::None => None,
        }
    }
}

/// The one write of a round.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    Create(CreateZone),
    /// The owner record, `email` or `ttl` differ from what the object says.
    Update(DnsZoneId, UpdateZone),
    /// Designate has the zone as declared (it may still be publishing it).
    Converged,
}

/// The next write: make the zone, put its declared fields (and the owner `record`)
/// back, or nothing.
pub fn plan(spec: &DnsZoneSpec, found: &Found, record: &str) -> Step {
    let zone = match found {
        Found::None => {
            return Step::Create(CreateZone {
                name: spec.name.clone(),
                email: spec.email.clone().unwrap_or_default(),
                ttl: spec.ttl,
                description: record.to_owned(),
            });
        }
        Found::Zone(zone) => zone,
    };
    let update = UpdateZone {
        email: spec.email.clone().filter(|e| *e != zone.email),
        ttl: spec.ttl.filter(|t| Some(*t) != zone.ttl),
        description: (zone.description.as_deref() != Some(record)).then(|| record.to_owned()),
    };
    match update.is_empty() || zone.is_going() {
        true => Step::Converged,
        false => Step::Update(zone.id.clone(), update),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RECORD: &str = "verda-uid-u verda-cluster-c";

    fn spec() -> DnsZoneSpec {
        DnsZoneSpec {
            name: "example.test.".into(),
            email: Some("hostmaster@example.test".into()),
            ttl: Some(600),
            ..DnsZoneSpec::default()
        }
    }

    fn zone() -> DnsZone {
        DnsZone {
            id: DnsZoneId::new("z1"),
            name: "example.test.".into(),
            status: "ACTIVE".into(),
            action: "NONE".into(),
            email: "hostmaster@example.test".into(),
            ttl: Some(600),
            serial: Some(7),
            description: Some(RECORD.into()),
        }
    }

    #[test]
    fn a_zone_the_project_lacks_is_created_with_the_owner_record() {
        let Step::Create(create) = plan(&spec(), &Found::None, RECORD) else {
            panic!("a create");
        };
        assert_eq!(create.name, "example.test.");
        assert_eq!(create.description, RECORD);
        assert_eq!(create.ttl, Some(600));
    }

    #[test]
    fn only_what_differs_is_written_and_a_field_not_declared_is_left_alone() {
        assert_eq!(plan(&spec(), &Found::Zone(zone()), RECORD), Step::Converged);
        let changed = DnsZone {
            ttl: Some(3600),
            ..zone()
        };
        let want = UpdateZone {
            ttl: Some(600),
            ..UpdateZone::default()
        };
        assert_eq!(
            plan(&spec(), &Found::Zone(changed.clone()), RECORD),
            Step::Update(changed.id.clone(), want)
        );
        let undeclared = DnsZoneSpec {
            ttl: None,
            ..spec()
        };
        assert_eq!(
            plan(&undeclared, &Found::Zone(changed), RECORD),
            Step::Converged
        );
    }

    #[test]
    fn an_imported_zone_gets_the_owner_record_first() {
        let imported = DnsZone {
            description: Some("made by hand".into()),
            ..zone()
        };
        let Step::Update(_, update) = plan(&spec(), &Found::Zone(imported), RECORD) else {
            panic!("an update");
        };
        assert_eq!(update.description.as_deref(), Some(RECORD));
    }
}
