//! Designate: zones looked up by name, created, updated and deleted; record sets listed
//! per zone, created, updated and deleted (`sim/designate-wire.md` records the real Designate 23's answers).

use http::Method;

use super::lookups::Kind;
use super::{OpenStackClient, pick_one};
use crate::cloud::auth::Service;
use crate::cloud::error::{CloudError, Resource};
use crate::cloud::ids::{DnsZoneId, RecordSetId};
use crate::cloud::model::dns::{
    CreateRecordSet, CreateZone, DnsZone, Nameservers, RecordSet, UpdateRecordSet, UpdateZone,
};
use crate::cloud::services::{CloudFuture, Dns};
use crate::cloud::transport::Request;

/// Designate's largest page (`max_limit_v2`).
const PAGE: &str = "1000";

fn designate(op: &'static str, method: Method, path: impl Into<String>) -> Request {
    Request::new(Service::Dns, op, method, path)
}

impl Dns for OpenStackClient {
    fn find_zone<'a>(&'a self, name: &'a str) -> CloudFuture<'a, DnsZone> {
        Box::pin(async move {
            let action = format!("look up DNS zone {name}");
            let fetch = async {
                let req = designate("list_zones", Method::GET, "/zones").query("name", name);
                let zones: Vec<DnsZone> = self.list_all(req, "zones", &action).await?;
                pick_one(Resource::DnsZone, name, zones, |z| z.id.to_string())
                    .map_err(|k| CloudError::new(action.clone(), k))
            };
            self.remembered(Kind::DnsZone, name, fetch).await
        })
    }

    fn list_zones(&self) -> CloudFuture<'_, Vec<DnsZone>> {
        Box::pin(async move {
            let req = designate("list_zones", Method::GET, "/zones").query("limit", PAGE);
            self.list_all(req, "zones", "list the DNS zones").await
        })
    }

    fn zones_named<'a>(&'a self, name: &'a str) -> CloudFuture<'a, Vec<DnsZone>> {
        Box::pin(async move {
            let req = designate("list_zones", Method::GET, "/zones").query("name", name);
            let action = format!("list the DNS zones named {name}");
            let listed: Vec<DnsZone> = self.list_all(req, "zones", &action).await?;
            // Designate's `name` filter takes `*` as a wildcard: keep exact matches.
            Ok(listed.into_iter().filter(|z| z.name == name).collect())
        })
    }

    fn get_zone<'a>(&'a self, id: &'a DnsZoneId) -> CloudFuture<'a, DnsZone> {
        Box::pin(async move {
            let req = designate("get_zone", Method::GET, format!("/zones/{id}"));
            let action = format!("show DNS zone {id}");
            self.fetch_body(&req, &action).await
        })
    }

    fn create_zone<'a>(&'a self, request: &'a CreateZone) -> CloudFuture<'a, DnsZone> {
        Box::pin(async move {
            let req = designate("create_zone", Method::POST, "/zones")
                .json(serde_json::to_value(request).unwrap_or_default());
            let action = format!("create DNS zone {}", request.name);
            self.fetch_body(&req, &action).await
        })
    }

    fn update_zone<'a>(
        &'a self,
        id: &'a DnsZoneId,
        request: &'a UpdateZone,
    ) -> CloudFuture<'a, DnsZone> {
        Box::pin(async move {
            let req = designate("update_zone", Method::PATCH, format!("/zones/{id}"))
                .json(serde_json::to_value(request).unwrap_or_default());
            let action = format!("update DNS zone {id}");
            self.fetch_body(&req, &action).await
        })
    }

    fn delete_zone<'a>(&'a self, id: &'a DnsZoneId) -> CloudFuture<'a, ()> {
        Box::pin(async move {
            let req = designate("delete_zone", Method::DELETE, format!("/zones/{id}"));
            self.execute(&req, &format!("delete DNS zone {id}")).await
        })
    }

    fn zone_nameservers<'a>(&'a self, id: &'a DnsZoneId) -> CloudFuture<'a, Vec<String>> {
        Box::pin(async move {
            let path = format!("/zones/{id}/nameservers");
            let req = designate("list_nameservers", Method::GET, path);
            let action = format!("list the name servers of DNS zone {id}");
            let listed: Nameservers = self.fetch_body(&req, &action).await?;
            Ok(listed.nameservers.into_iter().map(|n| n.hostname).collect())
        })
    }

    fn list_zone_record_sets<'a>(&'a self, zone: &'a DnsZoneId) -> CloudFuture<'a, Vec<RecordSet>> {
        Box::pin(async move {
            let path = format!("/zones/{zone}/recordsets");
            let req = designate("list_record_sets", Method::GET, path).query("limit", PAGE);
            let action = format!("list the DNS record sets of zone {zone}");
            // A zone deleted (and made again) since it was looked up: look it up again.
            let listed = self.list_all(req, "recordsets", &action).await;
            self.forget_on_refusal(listed, &[Kind::DnsZone])
        })
    }

    fn create_record_set<'a>(
        &'a self,
        zone: &'a DnsZoneId,
        request: &'a CreateRecordSet,
    ) -> CloudFuture<'a, RecordSet> {
        Box::pin(async move {
            let req = designate(
                "create_record_set",
                Method::POST,
                format!("/zones/{zone}/recordsets"),
            )
            .json(serde_json::to_value(request).unwrap_or_default());
            let action = format!("create DNS record set {} {}", request.name, request.type_);
            self.fetch_body(&req, &action).await
        })
    }

    fn update_record_set<'a>(
        &'a self,
        zone: &'a DnsZoneId,
        id: &'a RecordSetId,
        request: &'a UpdateRecordSet,
    ) -> CloudFuture<'a, RecordSet> {
        Box::pin(async move {
            let req = designate(
                "update_record_set",
                Method::PUT,
                format!("/zones/{zone}/recordsets/{id}"),
            )
            .json(serde_json::to_value(request).unwrap_or_default());
            let action = format!("update DNS record set {id}");
            self.fetch_body(&req, &action).await
        })
    }

    fn delete_record_set<'a>(
        &'a self,
        zone: &'a DnsZoneId,
        id: &'a RecordSetId,
    ) -> CloudFuture<'a, ()> {
        Box::pin(async move {
            let req = designate(
                "delete_record_set",
                Method::DELETE,
                format!("/zones/{zone}/recordsets/{id}"),
            );
            self.execute(&req, &format!("delete DNS record set {id}"))
                .await
        })
    }
}
