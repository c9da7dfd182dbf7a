//! Cinder verbs of [`BlockStorage`], microversion 3.42 on every call (set by the
//! transport). The catalog's URL already names the project (`/v3/{project_id}`).
//! A volume type Cinder does not know is answered 404 on create: reported as
//! `VolumeTypeNotFound`, a spec problem, not a missing object.

use std::collections::BTreeMap;

use http::Method;
use serde_json::json;

use super::OpenStackClient;
use crate::cloud::auth::Service;
use crate::cloud::error::{CloudError, ErrorKind, Resource};
use crate::cloud::ids::{AttachmentId, VolumeId};
use crate::cloud::model::compute::AvailabilityZone;
use crate::cloud::model::volume::{CreateVolume, Volume};
use crate::cloud::services::{BlockStorage, CloudFuture, CloudResult};
use crate::cloud::transport::Request;

fn cinder(op: &'static str, method: Method, path: impl Into<String>) -> Request {
    Request::new(Service::BlockStorage, op, method, path)
}

impl BlockStorage for OpenStackClient {
    fn create_volume<'a>(&'a self, request: &'a CreateVolume) -> CloudFuture<'a, Volume> {
        Box::pin(async move {
            let req = cinder("create_volume", Method::POST, "/volumes").json(request.to_wire());
            let action = format!("create volume {}", request.name);
            let created: CloudResult<Volume> = self.fetch(&req, "volume", &action).await;
            created.map_err(|e| unknown_type(e, request, &action))
        })
    }

    fn list_availability_zones(&self) -> CloudFuture<'_, Vec<AvailabilityZone>> {
        Box::pin(async move {
            let req = cinder(
                "list_availability_zones",
                Method::GET,
                "/os-availability-zone",
            );
            let action = "list the block storage availability zones";
            self.fetch(&req, "availabilityZoneInfo", action).await
        })
    }

    fn get_volume<'a>(&'a self, id: &'a VolumeId) -> CloudFuture<'a, Volume> {
        Box::pin(async move {
            let req = cinder("get_volume", Method::GET, format!("/volumes/{id}"));
            self.fetch(&req, "volume", &format!("get volume {id}"))
                .await
        })
    }

    fn list_volumes<'a>(
        &'a self,
        metadata: &'a BTreeMap<String, String>,
    ) -> CloudFuture<'a, Vec<Volume>> {
        Box::pin(async move {
            let req = cinder("list_volumes", Method::GET, "/volumes/detail")
                .query("metadata", json!(metadata).to_string());
            self.list_all(req, "volumes", "list volumes").await
        })
    }

    fn delete_volume<'a>(&'a self, id: &'a VolumeId) -> CloudFuture<'a, ()> {
        Box::pin(async move {
            let req = cinder("delete_volume", Method::DELETE, format!("/volumes/{id}"));
            self.execute(&req, &format!("delete volume {id}")).await
        })
    }

    fn extend_volume<'a>(&'a self, id: &'a VolumeId, size: i32) -> CloudFuture<'a, ()> {
        Box::pin(async move {
            let req = cinder(
                "extend_volume",
                Method::POST,
                format!("/volumes/{id}/action"),
            )
            .json(json!({"os-extend": {"new_size": size}}));
            let action = format!("extend volume {id} to {size} GiB");
            self.execute(&req, &action).await
        })
    }

    fn set_volume_metadata<'a>(
        &'a self,
        id: &'a VolumeId,
        metadata: &'a BTreeMap<String, String>,
    ) -> CloudFuture<'a, BTreeMap<String, String>> {
        Box::pin(async move {
            let req = cinder(
                "set_volume_metadata",
                Method::PUT,
                format!("/volumes/{id}/metadata"),
            )
            .json(json!({"metadata": metadata}))
            .idempotent();
            let action = format!("set the metadata of volume {id}");
            self.fetch(&req, "metadata", &action).await
        })
    }

    fn delete_attachment<'a>(&'a self, id: &'a AttachmentId) -> CloudFuture<'a, ()> {
        Box::pin(async move {
            let path = format!("/attachments/{id}");
            let req = cinder("delete_attachment", Method::DELETE, path);
            self.execute(&req, &format!("delete volume attachment {id}"))
                .await
        })
    }
}

/// Cinder's 404 on create names the volume type it does not know.
fn unknown_type(e: CloudError, request: &CreateVolume, action: &str) -> CloudError {
    match (&request.volume_type, e.kind()) {
        (Some(t), ErrorKind::NotFound { message }) if message.contains("type") => CloudError::new(
            action,
            ErrorKind::LookupNotFound {
                resource: Resource::VolumeType,
                name: t.clone(),
            },
        ),
        _ => e,
    }
}
