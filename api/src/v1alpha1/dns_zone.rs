//! DNSZone: a Designate zone of the project, made (or taken over with `spec.import`)
//! from Kubernetes, that the `dns` names of LoadBalancers, VirtualMachines and groups
//! can name.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::credentials::CloudCredentialsRef;
use super::rules::immutable_spec_field;

/// The desired state of a Designate zone.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema)]
#[kube(
    group = "verda.linecorp.com",
    version = "v1alpha1",
    kind = "DNSZone",
    namespaced,
    doc = "A Designate zone of the project, which the dns names of LoadBalancers, VirtualMachines and groups of the namespace can name.",
    shortname = "dnsz",
    category = "verda",
    status = "DnsZoneStatus",
    derive = "PartialEq",
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status","description":"The Ready condition: True, False or Unknown"}"#,
    printcolumn = r#"{"name":"Zone","type":"string","jsonPath":".spec.name"}"#,
    printcolumn = r#"{"name":"Status","type":"string","jsonPath":".status.status","description":"Designate's status of the zone: PENDING, ACTIVE or ERROR"}"#,
    printcolumn = r#"{"name":"Serial","type":"integer","jsonPath":".status.serial","priority":1}"#,
    printcolumn = r#"{"name":"Reason","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].reason","priority":1,"description":"Why the object is or is not Ready"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#,
    validation = immutable_spec_field("name", "Designate cannot rename a zone; create a new DNSZone instead"),
    validation = immutable_spec_field("region", "a zone cannot move between regions; create a new DNSZone instead"),
    validation = kube::core::Rule::new("has(self.spec.email) || has(self.spec.import)").message("spec.email is required to create a zone (its SOA contact), unless spec.import takes over one that exists").field_path(".spec.email")
)]
#[serde(rename_all = "camelCase")]
pub struct DnsZoneSpec {
    /// The zone's name with its final dot (`example.test.`). Immutable.
    #[schemars(length(min = 2, max = 255))]
    #[x_kube(validation = kube::core::Rule::new("self.endsWith('.') && !self.startsWith('.') && !self.contains('..') && self.matches('^[a-zA-Z0-9_.-]+$')").message("name is a DNS zone's name with its final dot, such as example.test."))]
    pub name: String,
    /// The zone's contact, in its SOA record (`hostmaster@example.test`). Required
    /// unless `import` takes over a zone; then it is set when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 3, max = 255))]
    #[x_kube(validation = kube::core::Rule::new("self.matches('^[^@ ]+@[^@ ]+$')").message("email is an address such as hostmaster@example.test"))]
    pub email: Option<String>,
    /// Seconds resolvers may keep the zone's answers (its default TTL); Designate's
    /// default (3600) when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 2_147_483_647))]
    pub ttl: Option<i32>,
    /// Free text shown beside the operator's owner record in the zone's description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 120))]
    pub description: Option<String>,
    /// OpenStack region of the Designate the zone is in; the cloud's region when absent.
    /// Immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 255))]
    pub region: Option<String>,
    /// OpenStack credentials for this object: a Secret in the same namespace. Without
    /// it the namespace's default Secret is used, else (where the operator allows it)
    /// the operator's own credentials. The zone stays in the project it was created in:
    /// credentials for another project are refused (`ProjectChanged`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cloud_credentials_ref: Option<CloudCredentialsRef>,
    /// Take over this existing zone of the project (its Designate ID) instead of
    /// creating one: it gets the owner record and is managed from then on (`email`,
    /// `ttl`, deleted with the object unless the reconcile policy says otherwise). A
    /// zone of another name is reported (`ImportMismatch`), never changed. The ID cannot
    /// be changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = super::virtual_machine::import_once())]
    pub import: Option<super::lifecycle::Import>,
}

/// The zone as Designate reports it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DnsZoneStatus {
    /// Designate's ID of the zone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Designate's status: `PENDING` until its name servers serve the latest change,
    /// `ACTIVE`, or `ERROR`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// The serial of the zone's SOA record: it grows with every change served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serial: Option<i64>,
    /// The name servers that serve the zone, to delegate it to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nameservers: Vec<String>,
    /// The OpenStack project (ID) the zone is in, recorded before it is created there.
    #[serde(default, rename = "projectID", skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
    /// The generation this status was last written for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// `Ready` (True once Designate serves the zone as declared), with `Reconciling`,
    /// `Stalled` and `Paused` as on every kind.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
}
