//! Glance v2 image lookup (the image part of [`crate::cloud::services::Compute`]).
//! `find_image` tries a GET only for UUID-shaped input (Glance IDs are UUIDs), then lists
//! by exact name; Glance sends HTML errors unless asked for JSON, which the transport does.

use http::Method;

use super::{OpenStackClient, pick_one};
use crate::cloud::auth::Service;
use crate::cloud::error::{CloudError, ErrorKind, Resource};
use crate::cloud::ids::{ImageId, looks_like_uuid};
use crate::cloud::model::compute::Image;
use crate::cloud::services::CloudResult;
use crate::cloud::transport::Request;

pub(super) async fn list(client: &OpenStackClient, name: Option<&str>) -> CloudResult<Vec<Image>> {
    let req =
        Request::new(Service::Image, "list_images", Method::GET, "/images").query_opt("name", name);
    let action = match name {
        Some(n) => format!("list images named {n}"),
        None => "list images".to_owned(),
    };
    client.list_all(req, "images", &action).await
}

pub(super) async fn get(client: &OpenStackClient, id: &ImageId) -> CloudResult<Image> {
    let req = Request::new(
        Service::Image,
        "get_image",
        Method::GET,
        format!("/images/{id}"),
    );
    // Glance answers the bare image object, without a wrapper key.
    let reply = client.send(&req, &format!("get image {id}")).await?;
    reply
        .json()
        .map_err(|k| CloudError::new(format!("get image {id}"), k))
}

pub(super) async fn find(client: &OpenStackClient, name_or_id: &str) -> CloudResult<Image> {
    if looks_like_uuid(name_or_id) {
        match get(client, &ImageId::new(name_or_id)).await {
            Err(e) if e.is_not_found() => {}
            other => return other,
        }
    }
    let named = list(client, Some(name_or_id)).await?;
    let exact: Vec<Image> = named.into_iter().filter(|i| i.name == name_or_id).collect();
    pick_one(Resource::Image, name_or_id, exact, |i| i.id.to_string())
        .map_err(|k: ErrorKind| CloudError::new(format!("find image {name_or_id}"), k))
}
