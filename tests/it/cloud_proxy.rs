//! The cloud client through a real forward proxy on 127.0.0.1: Keystone and Nova over
//! https through CONNECT tunnels (the proxy over plain TCP or TLS), plain http sent to
//! the proxy whole, `NO_PROXY` bypassing it, the proxy's credentials sent to it and to
//! nothing else, and an unreachable proxy named in the error.
#![allow(clippy::unwrap_used)]

use crate::cloud_support;

use cloud_support::fast_retries;
use cloud_support::proxy::{HttpsCloud, Proxy, test_ca};
use verda_operator::cloud::ids::{FlavorId, ImageId, NetworkId};
use verda_operator::cloud::model::compute::CreateServer;
use verda_operator::cloud::{ClientOptions, Compute, OpenStackClient, Proxies};
use verda_operator::sim::{SimConfig, Simulator};

/// `user:s3cret` as `Proxy-Authorization` sends it.
const CREDENTIALS: &str = "Basic dXNlcjpzM2NyZXQ=";

/// A client of the simulator's first project, at `auth_url` when given (trusting the
/// test CA), through `proxies`.
fn client(sim: &Simulator, auth_url: Option<&str>, proxies: Proxies) -> OpenStackClient {
    let dir = cloud_support::temp_dir("proxy");
    let mut config = cloud_support::cloud_config(&dir, &sim.clouds_yaml(), "verda-sim");
    if let Some(url) = auth_url {
        config.auth_url = url.to_owned();
        config.tls.cacert = Some(test_ca());
    }
    let options = ClientOptions {
        retry: fast_retries(),
        proxies: Some(proxies),
        ..ClientOptions::default()
    };
    OpenStackClient::new(config, verda_operator::metrics::Metrics::new(), options).unwrap()
}

/// `http://user:s3cret@HOST:PORT` for the proxy at `url`.
fn with_credentials(url: &str) -> String {
    url.replacen("://", "://user:s3cret@", 1)
}

fn create_request() -> CreateServer {
    CreateServer {
        name: "verda-default-proxied-0".into(),
        image: ImageId::new("244965c2-7e98-469d-b7cc-fe423698200a"),
        flavor: FlavorId::new("10"),
        networks: vec![NetworkId::new("89908bff-e0fe-45be-b92d-5828f5ddc763")],
        ..CreateServer::default()
    }
}

/// A token, a listing and a create: Keystone's and Nova's calls.
async fn call_keystone_and_nova(client: &OpenStackClient) {
    assert!(!client.list_flavors().await.unwrap().is_empty());
    client.create_server(&create_request()).await.unwrap();
}

#[tokio::test]
async fn cloud_calls_go_through_a_connect_tunnel_of_the_https_proxy() {
    let sim = Simulator::start(SimConfig::fast()).await.unwrap();
    let cloud = HttpsCloud::start(&sim).await;
    let proxy = Proxy::start().await;
    let proxies = Proxies {
        https: with_credentials(&proxy.url),
        ..Proxies::default()
    };
    call_keystone_and_nova(&client(&sim, Some(&cloud.auth_url), proxies)).await;

    assert_eq!(sim.requests("identity", "issue_token"), 1);
    assert_eq!(sim.requests("compute", "create_server"), 1);
    assert_eq!(sim.servers().len(), 1);
    let tunnels = proxy.tunnels();
    assert!(!tunnels.is_empty(), "no CONNECT reached the proxy");
    assert!(tunnels.iter().all(|t| *t == cloud.host), "{tunnels:?}");
    assert!(proxy.forwarded().is_empty(), "{:?}", proxy.forwarded());
    let credentials = proxy.credentials();
    assert_eq!(credentials.len(), tunnels.len());
    assert!(
        credentials.iter().all(|c| c == CREDENTIALS),
        "{credentials:?}"
    );
}

#[tokio::test]
async fn an_https_proxy_is_reached_over_tls_and_tunnels_tls_within() {
    let sim = Simulator::start(SimConfig::fast()).await.unwrap();
    let cloud = HttpsCloud::start(&sim).await;
    let proxy = Proxy::start_tls().await;
    let proxies = Proxies {
        all: proxy.url.clone(),
        ..Proxies::default()
    };
    call_keystone_and_nova(&client(&sim, Some(&cloud.auth_url), proxies)).await;

    assert_eq!(sim.requests("compute", "create_server"), 1);
    let tunnels = proxy.tunnels();
    assert!(!tunnels.is_empty(), "no CONNECT reached the proxy");
    assert!(tunnels.iter().all(|t| *t == cloud.host), "{tunnels:?}");
}

#[tokio::test]
async fn hosts_no_proxy_names_are_reached_directly() {
    let sim = Simulator::start(SimConfig::fast()).await.unwrap();
    let cloud = HttpsCloud::start(&sim).await;
    let proxy = Proxy::start().await;
    let proxies = Proxies {
        https: proxy.url.clone(),
        http: proxy.url.clone(),
        no: "example.com, localhost".to_owned(),
        ..Proxies::default()
    };
    call_keystone_and_nova(&client(&sim, Some(&cloud.auth_url), proxies)).await;

    assert_eq!(sim.requests("identity", "issue_token"), 1);
    assert_eq!(sim.requests("compute", "create_server"), 1);
    assert_eq!(proxy.tunnels(), Vec::<String>::new());
    assert_eq!(proxy.forwarded(), Vec::<String>::new());
}

#[tokio::test]
async fn plain_http_cloud_calls_are_sent_to_the_proxy_whole_with_its_credentials() {
    let sim = Simulator::start(SimConfig::fast()).await.unwrap();
    let proxy = Proxy::start().await;
    let proxies = Proxies {
        http: with_credentials(&proxy.url),
        ..Proxies::default()
    };
    call_keystone_and_nova(&client(&sim, None, proxies)).await;

    assert_eq!(sim.requests("identity", "issue_token"), 1);
    assert_eq!(sim.requests("compute", "create_server"), 1);
    assert_eq!(proxy.tunnels(), Vec::<String>::new());
    let forwarded = proxy.forwarded();
    assert!(!forwarded.is_empty(), "no request reached the proxy");
    let sim_url = format!("http://{}/", sim.addr());
    assert!(
        forwarded.iter().all(|t| t.starts_with(&sim_url)),
        "{forwarded:?}"
    );
    assert_eq!(proxy.credentials(), vec![CREDENTIALS; forwarded.len()]);
}

#[tokio::test]
async fn an_unreachable_proxy_fails_the_call_with_an_error_naming_it_without_its_credentials() {
    let sim = Simulator::start(SimConfig::fast()).await.unwrap();
    let cloud = HttpsCloud::start(&sim).await;
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = closed.local_addr().unwrap();
    drop(closed);
    let proxies = Proxies {
        https: format!("http://user:s3cret@{address}"),
        ..Proxies::default()
    };
    let err = client(&sim, Some(&cloud.auth_url), proxies)
        .list_flavors()
        .await
        .unwrap_err();

    assert_eq!(err.category(), "CloudUnavailable", "{err}");
    let message = err.to_string();
    println!("through an unreachable proxy: {message}");
    assert!(
        message.contains(&format!(
            "cannot connect: through the proxy http://{address}"
        )),
        "{message}"
    );
    assert!(message.contains("refused"), "{message}");
    assert!(
        !message.contains("s3cret") && !message.contains("user"),
        "{message}"
    );
    assert_eq!(sim.requests("identity", "issue_token"), 0);
}
