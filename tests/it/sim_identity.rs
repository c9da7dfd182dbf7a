//! Keystone wire tests: token issue (password, application credential), catalog,
//! 401/400 bodies, expiry as other services see it.
#![allow(clippy::unwrap_used)]

use crate::sim_support;

use reqwest::Method;
use serde_json::json;
use sim_support::{Client, app_cred_auth, issue_token_with, json_of, password_auth};
use verda_operator::sim::{SimConfig, Simulator};

#[tokio::test]
async fn password_token_is_in_header_and_catalog_lists_every_service_in_both_regions() {
    let sim = Simulator::start(SimConfig::fast()).await.unwrap();
    let resp = reqwest::Client::new()
        .post(format!("{}/auth/tokens", sim.auth_url()))
        .json(&password_auth())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 201);
    assert!(resp.headers().get("x-subject-token").is_some());
    let body = json_of(resp).await;
    let catalog = body["token"]["catalog"].as_array().unwrap();
    for kind in ["compute", "image", "network", "load-balancer", "identity"] {
        let entry = catalog.iter().find(|c| c["type"] == kind).unwrap();
        for region in ["RegionOne", "tokyo1"] {
            assert!(
                entry["endpoints"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|e| e["region"] == region && e["interface"] == "public")
            );
        }
    }
    assert_eq!(body["token"]["project"]["name"], "demo");
}

#[tokio::test]
async fn application_credential_gets_a_scoped_token() {
    let sim = Simulator::start(SimConfig::fast()).await.unwrap();
    let c = sim.credentials();
    let body = app_cred_auth(&c);
    let resp = reqwest::Client::new()
        .post(format!("{}/auth/tokens", sim.auth_url()))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 201);
    let token = json_of(resp).await;
    assert_eq!(token["token"]["methods"], json!(["application_credential"]));
    assert!(
        token["token"]["catalog"]
            .as_array()
            .is_some_and(|c| !c.is_empty())
    );
}

#[tokio::test]
async fn wrong_password_answers_recorded_401() {
    let sim = Simulator::start(SimConfig::fast()).await.unwrap();
    let mut body = password_auth();
    body["auth"]["identity"]["password"]["user"]["password"] = json!("nope");
    let resp = reqwest::Client::new()
        .post(format!("{}/auth/tokens", sim.auth_url()))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 401);
    assert!(
        resp.headers()["www-authenticate"]
            .to_str()
            .unwrap()
            .starts_with("Keystone uri=")
    );
    assert_eq!(
        json_of(resp).await,
        json!({"error": {"code": 401, "message": "The request you have made requires authentication.", "title": "Unauthorized"}})
    );
}

#[tokio::test]
async fn password_method_without_password_block_is_400() {
    let sim = Simulator::start(SimConfig::fast()).await.unwrap();
    let body = json!({"auth": {"identity": {"methods": ["password"]}}});
    let resp = reqwest::Client::new()
        .post(format!("{}/auth/tokens", sim.auth_url()))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    assert!(
        json_of(resp).await["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("Expecting to find password in identity.")
    );
}

#[tokio::test]
async fn expired_token_is_refused_by_every_service_with_middleware_body() {
    let c = Client::fast().await;
    c.sim.expire_tokens();
    for path in [
        "/compute/v2.1/servers",
        "/network/v2.0/networks",
        "/load-balancer/v2/lbaas/loadbalancers",
    ] {
        let resp = c.req(Method::GET, path).send().await.unwrap();
        assert_eq!(resp.status(), 401, "{path}");
        let body = json_of(resp).await;
        assert_eq!(
            body["error"]["message"],
            "The request you have made requires authentication."
        );
    }
    let glance = c.req(Method::GET, "/image/v2/images").send().await.unwrap();
    assert_eq!(glance.status(), 401);
    assert_eq!(json_of(glance).await["code"], "401 Unauthorized");
}

#[tokio::test]
async fn short_token_lifetime_expires_tokens() {
    let c = Client::start(SimConfig {
        token_lifetime: std::time::Duration::from_millis(400),
        ..SimConfig::fast()
    })
    .await;
    assert_eq!(
        c.nova(Method::GET, "/servers", 64)
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(
        c.nova(Method::GET, "/servers", 64)
            .send()
            .await
            .unwrap()
            .status(),
        401
    );
}

#[tokio::test]
async fn version_document_is_300_with_location() {
    let sim = Simulator::start(SimConfig::fast()).await.unwrap();
    let resp = reqwest::get(format!("http://{}/identity/", sim.addr()))
        .await
        .unwrap();
    assert_eq!(resp.status(), 300);
    assert!(
        resp.headers()["location"]
            .to_str()
            .unwrap()
            .ends_with("/identity/v3/")
    );
    assert_eq!(json_of(resp).await["versions"]["values"][0]["id"], "v3.14");
}

/// Two projects, kept apart as Keystone and Nova keep them: a user scopes only to its
/// own project, a token sees only its project's servers, and a network ID of one
/// project does not exist in the other.
#[tokio::test]
async fn each_project_sees_only_its_own_servers_and_users_scope_only_to_their_own() {
    let demo = Client::fast().await;
    let team = demo.sim.team_credentials();
    let auth = |project: &str| {
        json!({"auth": {
            "identity": {"methods": ["password"], "password": {"user": {
                "name": team.username, "domain": {"name": "Default"}, "password": team.password}}},
            "scope": {"project": {"name": project, "domain": {"name": "Default"}}}
        }})
    };
    let tokens = format!("{}/auth/tokens", demo.sim.auth_url());
    let refused = demo
        .http
        .post(&tokens)
        .json(&auth("demo"))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401, "team-b's user may not scope to demo");
    let (token, issued) = issue_token_with(&demo.http, &demo.sim, &auth(&team.project_name)).await;
    assert_eq!(issued["token"]["project"]["id"], team.project_id.as_str());
    // Nova as team-b.
    let as_team = |method: Method, path: &str| {
        demo.http
            .request(method, format!("{}/compute/v2.1{path}", demo.base))
            .header("x-auth-token", token.as_str())
            .header("accept", "application/json")
            .header("openstack-api-version", "compute 2.64")
    };

    let demo_server = demo.create_server("demo-server", json!({})).await;
    // demo's network ID (the helper's default) does not exist in team-b.
    let foreign = as_team(Method::POST, "/servers")
        .json(
            &json!({"server": {"name": "x", "imageRef": "244965c2-7e98-469d-b7cc-fe423698200a",
            "flavorRef": "10", "networks": [{"uuid": "89908bff-e0fe-45be-b92d-5828f5ddc763"}]}}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(foreign.status(), 400);
    let listed = |request: reqwest::RequestBuilder| async move {
        let body = json_of(request.send().await.unwrap()).await;
        body["servers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["id"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        listed(demo.nova(Method::GET, "/servers", 64)).await,
        std::slice::from_ref(&demo_server)
    );
    assert!(
        listed(as_team(Method::GET, "/servers")).await.is_empty(),
        "team-b sees none of demo's servers"
    );
    let missing = as_team(Method::GET, &format!("/servers/{demo_server}"))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);

    // team-b's own `private` network (another ID) takes its server, which says whose
    // it is and which demo does not see.
    let networks = demo
        .http
        .get(format!("{}/network/v2.0/networks?name=private", demo.base))
        .header("x-auth-token", token.as_str())
        .send()
        .await
        .unwrap();
    let network = json_of(networks).await["networks"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(network, "89908bff-e0fe-45be-b92d-5828f5ddc763");
    let created = as_team(Method::POST, "/servers")
        .json(&json!({"server": {"name": "team-server", "imageRef": "244965c2-7e98-469d-b7cc-fe423698200a",
            "flavorRef": "10", "networks": [{"uuid": network}]}}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 202);
    let id = json_of(created).await["server"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let shown = json_of(
        as_team(Method::GET, &format!("/servers/{id}"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(shown["server"]["tenant_id"], team.project_id.as_str());
    assert_eq!(
        listed(demo.nova(Method::GET, "/servers", 64)).await,
        std::slice::from_ref(&demo_server)
    );
}

#[tokio::test]
async fn generated_tenants_each_get_a_project_of_their_own() {
    let sim = Simulator::start(SimConfig {
        tenants: 2,
        ..SimConfig::fast()
    })
    .await
    .unwrap();
    let tenants = sim.tenant_credentials().to_vec();
    assert_eq!(
        tenants
            .iter()
            .map(|t| t.project_name.as_str())
            .collect::<Vec<_>>(),
        ["tenant-1", "tenant-2"]
    );
    let http = reqwest::Client::new();
    let tokens = format!("{}/auth/tokens", sim.auth_url());
    let mut private_networks = Vec::new();
    for tenant in &tenants {
        let (token, scoped) = issue_token_with(&http, &sim, &app_cred_auth(tenant)).await;
        assert_eq!(scoped["token"]["project"]["id"], tenant.project_id.as_str());
        let networks = http
            .get(format!(
                "http://{}/network/v2.0/networks?name=private",
                sim.addr()
            ))
            .header("x-auth-token", token)
            .send()
            .await
            .unwrap();
        let listed = json_of(networks).await;
        private_networks.push(listed["networks"][0]["id"].as_str().unwrap().to_owned());
    }
    assert_ne!(
        private_networks[0], private_networks[1],
        "each tenant's network is its own"
    );
    assert!(
        private_networks
            .iter()
            .all(|id| uuid::Uuid::parse_str(id).is_ok()),
        "network IDs are UUIDs: {private_networks:?}"
    );

    let (first, second) = (&tenants[0], &tenants[1]);
    let foreign_scope = json!({"auth": {
        "identity": {"methods": ["password"], "password": {"user": {
            "name": first.username, "domain": {"name": "Default"}, "password": first.password}}},
        "scope": {"project": {"id": second.project_id}}
    }});
    let refused = http
        .post(&tokens)
        .json(&foreign_scope)
        .send()
        .await
        .unwrap();
    assert_eq!(
        refused.status(),
        401,
        "tenant-1's user may not scope to tenant-2"
    );
}
