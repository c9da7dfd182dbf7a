//! Nova verbs of [`Compute`] (image lookups are in `image.rs`). Microversion 2.67 on
//! every call (set by the transport). `find_flavor` lists `flavors/detail` once and
//! matches ID then name, falling back to a GET by ID only on a miss (private flavors).

use std::collections::BTreeMap;

use http::Method;
use serde::Deserialize;
use serde_json::json;

use super::image;
use super::owner_lookups::OwnerFilter;
use super::{Kind, OpenStackClient, compute, pick_one};
use crate::cloud::error::{CloudError, ErrorKind, Resource};
use crate::cloud::ids::{FlavorId, ImageId, ServerGroupId, ServerId, VolumeId};
use crate::cloud::model::compute::{
    AvailabilityZone, CreateServer, Flavor, Image, Server, ServerGroup, ServerGroupPolicy,
    ServerWire,
};
use crate::cloud::model::volume::VolumeAttachment;
use crate::cloud::owner::MANAGED_TAG;
use crate::cloud::services::{CloudFuture, CloudResult, Compute, MetadataMode};

#[derive(Deserialize)]
struct Created {
    id: ServerId,
}

/// Server groups asked for per page: Nova's default `[api] max_limit`.
const SERVER_GROUP_PAGE: usize = 1000;

impl Compute for OpenStackClient {
    fn list_flavors(&self) -> CloudFuture<'_, Vec<Flavor>> {
        Box::pin(async move {
            let req = compute("list_flavors", Method::GET, "/flavors/detail");
            self.list_all(req, "flavors", "list flavors").await
        })
    }

    fn get_flavor<'a>(&'a self, id: &'a FlavorId) -> CloudFuture<'a, Flavor> {
        Box::pin(async move {
            let req = compute("get_flavor", Method::GET, format!("/flavors/{id}"));
            self.fetch(&req, "flavor", &format!("get flavor {id}"))
                .await
        })
    }

    fn find_flavor<'a>(&'a self, name_or_id: &'a str) -> CloudFuture<'a, Flavor> {
        Box::pin(self.remembered(Kind::Flavor, name_or_id, self.flavor_find(name_or_id)))
    }

    fn create_server<'a>(&'a self, request: &'a CreateServer) -> CloudFuture<'a, ServerId> {
        Box::pin(async move {
            let req = compute("create_server", Method::POST, "/servers").json(request.to_wire());
            let created: CloudResult<Created> = self
                .fetch(&req, "server", &format!("create server {}", request.name))
                .await;
            let created =
                self.forget_on_refusal(created, &[Kind::Image, Kind::Flavor, Kind::Network])?;
            Ok(created.id)
        })
    }

    fn get_server<'a>(&'a self, id: &'a ServerId) -> CloudFuture<'a, Server> {
        Box::pin(async move {
            let req = compute("get_server", Method::GET, format!("/servers/{id}"));
            let wire: ServerWire = self
                .fetch(&req, "server", &format!("get server {id}"))
                .await?;
            Ok(wire.into())
        })
    }

    /// Coalesced with the lookups of other owners asked for meanwhile (see
    /// [`super::owner_lookups`]).
    fn list_servers<'a>(&'a self, owner_uid: &'a str) -> CloudFuture<'a, Vec<Server>> {
        Box::pin(async move {
            let queue = self.server_lookups.of(self.region());
            queue
                .of_owner(owner_uid, |uids| self.servers_of_owners(uids))
                .await
        })
    }

    fn each_managed_server_page<'a>(
        &'a self,
        take: &'a mut (dyn FnMut(Vec<Server>) + Send),
    ) -> CloudFuture<'a, ()> {
        Box::pin(async move {
            let req = compute("list_managed_servers", Method::GET, "/servers/detail")
                .query("tags", MANAGED_TAG);
            let mut page =
                |wires: Vec<ServerWire>| take(wires.into_iter().map(Server::from).collect());
            self.list_pages(req, "servers", "list the operator's servers", &mut page)
                .await
        })
    }

    fn delete_server<'a>(&'a self, id: &'a ServerId) -> CloudFuture<'a, ()> {
        Box::pin(async move {
            let req = compute("delete_server", Method::DELETE, format!("/servers/{id}"));
            self.execute(&req, &format!("delete server {id}")).await
        })
    }

    fn update_server<'a>(
        &'a self,
        id: &'a ServerId,
        description: Option<&'a str>,
    ) -> CloudFuture<'a, Server> {
        Box::pin(async move {
            let req = compute("update_server", Method::PUT, format!("/servers/{id}"))
                .json(json!({"server": {"description": description}}));
            let wire: ServerWire = self
                .fetch(&req, "server", &format!("update server {id}"))
                .await?;
            Ok(wire.into())
        })
    }

    fn set_server_tags<'a>(
        &'a self,
        id: &'a ServerId,
        tags: &'a [String],
    ) -> CloudFuture<'a, Vec<String>> {
        Box::pin(async move {
            let req = compute(
                "set_server_tags",
                Method::PUT,
                format!("/servers/{id}/tags"),
            )
            .json(json!({"tags": tags}))
            .idempotent();
            self.fetch(&req, "tags", &format!("set the tags of server {id}"))
                .await
        })
    }

    fn set_server_metadata<'a>(
        &'a self,
        id: &'a ServerId,
        metadata: &'a BTreeMap<String, String>,
        mode: MetadataMode,
    ) -> CloudFuture<'a, BTreeMap<String, String>> {
        Box::pin(async move {
            let method = match mode {
                MetadataMode::Merge => Method::POST,
                MetadataMode::Replace => Method::PUT,
            };
            // A merge of the same keys twice has the same effect: safe to retry.
            let req = compute(
                "set_server_metadata",
                method,
                format!("/servers/{id}/metadata"),
            )
            .json(json!({"metadata": metadata}))
            .idempotent();
            self.fetch(&req, "metadata", &format!("set metadata of server {id}"))
                .await
        })
    }

    fn resize_server<'a>(&'a self, id: &'a ServerId, flavor: &'a FlavorId) -> CloudFuture<'a, ()> {
        Box::pin(async move {
            let req = compute(
                "resize_server",
                Method::POST,
                format!("/servers/{id}/action"),
            )
            .json(json!({"resize": {"flavorRef": flavor}}));
            self.execute(&req, &format!("resize server {id} to flavor {flavor}"))
                .await
        })
    }

    fn confirm_resize<'a>(&'a self, id: &'a ServerId) -> CloudFuture<'a, ()> {
        Box::pin(async move {
            let req = compute(
                "confirm_resize",
                Method::POST,
                format!("/servers/{id}/action"),
            )
            .json(json!({"confirmResize": null}));
            self.execute(&req, &format!("confirm resize of server {id}"))
                .await
        })
    }

    fn set_server_power<'a>(&'a self, id: &'a ServerId, start: bool) -> CloudFuture<'a, ()> {
        Box::pin(async move {
            let (op, action, verb) = match start {
                true => ("start_server", "os-start", "start"),
                false => ("stop_server", "os-stop", "stop"),
            };
            let req = compute(op, Method::POST, format!("/servers/{id}/action"))
                .json(json!({ action: null }));
            self.execute(&req, &format!("{verb} server {id}")).await
        })
    }

    fn create_server_group<'a>(
        &'a self,
        name: &'a str,
        policy: ServerGroupPolicy,
    ) -> CloudFuture<'a, ServerGroup> {
        Box::pin(async move {
            let req = compute("create_server_group", Method::POST, "/os-server-groups")
                .json(json!({"server_group": {"name": name, "policy": policy}}));
            self.fetch(&req, "server_group", &format!("create server group {name}"))
                .await
        })
    }

    fn get_server_group<'a>(&'a self, id: &'a ServerGroupId) -> CloudFuture<'a, ServerGroup> {
        Box::pin(async move {
            let req = compute(
                "get_server_group",
                Method::GET,
                format!("/os-server-groups/{id}"),
            );
            self.fetch(&req, "server_group", &format!("get server group {id}"))
                .await
        })
    }

    fn list_server_groups(&self) -> CloudFuture<'_, Vec<ServerGroup>> {
        Box::pin(async move {
            let action = "list server groups";
            let mut groups: Vec<ServerGroup> = Vec::new();
            // Nova pages server groups by `limit`/`offset` and gives no `next` link, and
            // its `[api] max_limit` (1,000 by default) may cap a page below what is asked
            // for: the listing ends at an empty page, or at one shorter than the first.
            let mut first = None;
            for _ in 0..super::MAX_PAGES {
                let req = compute("list_server_groups", Method::GET, "/os-server-groups")
                    .query("limit", SERVER_GROUP_PAGE.to_string())
                    .query("offset", groups.len().to_string());
                let page: Vec<ServerGroup> = self.fetch(&req, "server_groups", action).await?;
                let first = *first.get_or_insert(page.len());
                let last = page.is_empty() || page.len() < first;
                groups.extend(page);
                if last {
                    return Ok(groups);
                }
            }
            Err(CloudError::new(
                action,
                ErrorKind::InvalidResponse {
                    message: format!("more than {} pages of server groups", super::MAX_PAGES),
                },
            ))
        })
    }

    fn list_availability_zones(&self) -> CloudFuture<'_, Vec<AvailabilityZone>> {
        Box::pin(async move {
            let req = compute(
                "list_availability_zones",
                Method::GET,
                "/os-availability-zone",
            );
            self.fetch(&req, "availabilityZoneInfo", "list availability zones")
                .await
        })
    }

    fn delete_server_group<'a>(&'a self, id: &'a ServerGroupId) -> CloudFuture<'a, ()> {
        Box::pin(async move {
            let req = compute(
                "delete_server_group",
                Method::DELETE,
                format!("/os-server-groups/{id}"),
            );
            self.execute(&req, &format!("delete server group {id}"))
                .await
        })
    }

    fn list_images<'a>(&'a self, name: Option<&'a str>) -> CloudFuture<'a, Vec<Image>> {
        Box::pin(image::list(self, name))
    }

    fn get_image<'a>(&'a self, id: &'a ImageId) -> CloudFuture<'a, Image> {
        Box::pin(image::get(self, id))
    }

    fn find_image<'a>(&'a self, name_or_id: &'a str) -> CloudFuture<'a, Image> {
        Box::pin(self.remembered(Kind::Image, name_or_id, image::find(self, name_or_id)))
    }

    fn attach_volume<'a>(
        &'a self,
        server: &'a ServerId,
        volume: &'a VolumeId,
    ) -> CloudFuture<'a, VolumeAttachment> {
        Box::pin(async move {
            let path = format!("/servers/{server}/os-volume_attachments");
            let req = compute("attach_volume", Method::POST, path)
                .json(json!({"volumeAttachment": {"volumeId": volume}}));
            let action = format!("attach volume {volume} to server {server}");
            self.fetch(&req, "volumeAttachment", &action).await
        })
    }

    fn detach_volume<'a>(
        &'a self,
        server: &'a ServerId,
        volume: &'a VolumeId,
    ) -> CloudFuture<'a, ()> {
        Box::pin(async move {
            let path = format!("/servers/{server}/os-volume_attachments/{volume}");
            let req = compute("detach_volume", Method::DELETE, path);
            let action = format!("detach volume {volume} from server {server}");
            self.execute(&req, &action).await
        })
    }
}

impl OpenStackClient {
    /// A flavor by ID or name, asking the cloud.
    async fn flavor_find(&self, name_or_id: &str) -> CloudResult<Flavor> {
        let action = format!("find flavor {name_or_id}");
        let all = self.list_flavors().await?;
        if let Some(f) = all.iter().find(|f| f.id.as_str() == name_or_id) {
            return Ok(f.clone());
        }
        let named: Vec<Flavor> = all.into_iter().filter(|f| f.name == name_or_id).collect();
        if named.is_empty() {
            // Private flavors are not listed but can be fetched by ID.
            return match self.get_flavor(&FlavorId::new(name_or_id)).await {
                Err(e) if e.is_not_found() => Err(CloudError::new(
                    action,
                    crate::cloud::error::ErrorKind::LookupNotFound {
                        resource: Resource::Flavor,
                        name: name_or_id.to_owned(),
                    },
                )),
                other => other,
            };
        }
        pick_one(Resource::Flavor, name_or_id, named, |f| f.id.to_string())
            .map_err(|k| CloudError::new(action, k))
    }
}

impl OpenStackClient {
    /// The servers tagged with any of the owners' tags, in one call.
    async fn servers_of_owners(&self, uids: Vec<String>) -> CloudResult<Vec<Server>> {
        let filter = OwnerFilter::of(&uids, "servers");
        let req =
            compute("list_servers", Method::GET, "/servers/detail").query(filter.key, filter.tags);
        let wires: Vec<ServerWire> = self.list_all(req, "servers", &filter.action).await?;
        Ok(wires.into_iter().map(Server::from).collect())
    }
}
