//! The proxies the cloud is reached through, as `HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY`
//! and `NO_PROXY` (or their lower-case names) say, the way curl reads them: the
//! connector of the cloud's one connection pool, which connects directly or through the
//! proxy its destination calls for.
//!
//! An https endpoint is reached through a CONNECT tunnel (hyper-util's): TLS runs end to
//! end and the proxy sees only the host and port. A plain http endpoint is not tunnelled:
//! its requests go to the proxy itself, naming the whole URL, as curl sends them. Proxies
//! commonly refuse CONNECT to ports other than 443 (squid's default configuration does),
//! which is where a Keystone on :5000 would be, and a tunnel would hide nothing.
//!
//! A proxy's user info (`http://user:password@proxy:3128`) becomes `Proxy-Authorization`
//! and appears nowhere else: errors and [`Proxies`]'s `Debug` name a proxy by scheme, host
//! and port. Not here: SOCKS proxies, refused as a configuration error rather than
//! silently bypassed.

use std::error::Error as StdError;
use std::fmt;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::header::PROXY_AUTHORIZATION;
use http::uri::{Authority, Scheme};
use http::{Request, Uri};
use hyper_rustls::{HttpsConnector, MaybeHttpsStream};
use hyper_util::client::legacy::connect::proxy::Tunnel;
use hyper_util::client::legacy::connect::{Connected, Connection, HttpConnector};
use hyper_util::client::proxy::matcher::Matcher;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tower::{Service, ServiceExt};

use super::error::ErrorKind;
use super::tls::config_error;

type BoxError = Box<dyn StdError + Send + Sync>;

/// The proxies the cloud's requests go through: the environment's by default
/// ([`Proxies::from_env`]); empty strings name none.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct Proxies {
    /// `HTTPS_PROXY`: the proxy of https endpoints.
    pub https: String,
    /// `HTTP_PROXY`: the proxy of plain http endpoints.
    pub http: String,
    /// `ALL_PROXY`: the proxy of either, where the one of its scheme is unset.
    pub all: String,
    /// `NO_PROXY`: hosts, domains (with their subdomains), addresses and networks
    /// reached directly; `*` for all.
    pub no: String,
}

impl Proxies {
    /// As the environment names them, the upper-case variable first.
    pub fn from_env() -> Self {
        let var = |upper: &str, lower: &str| {
            [upper, lower]
                .iter()
                .find_map(|name| std::env::var(name).ok().filter(|v| !v.is_empty()))
                .unwrap_or_default()
        };
        Self {
            https: var("HTTPS_PROXY", "https_proxy"),
            http: var("HTTP_PROXY", "http_proxy"),
            all: var("ALL_PROXY", "all_proxy"),
            no: var("NO_PROXY", "no_proxy"),
        }
    }

    /// The matcher of these proxies; one hyper-util cannot use (it would ignore it and
    /// connect directly) is a configuration error naming the variable, not its value.
    fn matcher(&self) -> Result<Matcher, ErrorKind> {
        for (name, value) in self.named() {
            if value.is_empty() {
                continue;
            }
            let uri = value.parse::<Uri>().map_err(|_| {
                config_error(format!(
                    "{name} is not a proxy URL such as http://proxy:3128"
                ))
            })?;
            match uri.scheme_str() {
                None | Some("http" | "https") => {}
                Some(scheme) => {
                    return Err(config_error(format!(
                        "{name} names a {scheme} proxy: only HTTP proxies (http:// or https://) are supported"
                    )));
                }
            }
        }
        Ok(Matcher::builder()
            .https(&self.https)
            .http(&self.http)
            .all(&self.all)
            .no(&self.no)
            .build())
    }

    fn named(&self) -> [(&'static str, &str); 3] {
        [
            ("HTTPS_PROXY", &self.https),
            ("HTTP_PROXY", &self.http),
            ("ALL_PROXY", &self.all),
        ]
    }
}

/// The proxies by scheme, host and port: never their user info.
impl fmt::Debug for Proxies {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut shown = f.debug_struct("Proxies");
        for (name, value) in self.named() {
            if !value.is_empty() {
                let uri = value.parse::<Uri>().ok();
                shown.field(name, &uri.as_ref().map_or("(not a URL)".into(), address));
            }
        }
        shown.field("NO_PROXY", &self.no).finish()
    }
}

/// `scheme://host:port` of a URL, without its user info or path.
fn address(uri: &Uri) -> String {
    let host = uri.authority().map_or("", Authority::as_str);
    let host = host.rsplit_once('@').map_or(host, |(_, host)| host);
    format!("{}://{host}", uri.scheme_str().unwrap_or("http"))
}

/// A connection failed on the way through a proxy.
#[derive(Debug, thiserror::Error)]
#[error("through the proxy {proxy}")]
struct ThroughProxy {
    /// [`address`] of the proxy.
    proxy: String,
    #[source]
    source: BoxError,
}

/// Connects to a destination directly or through the proxy that
/// [`Proxies`] name for it; TLS to the destination is the wrapping connector's.
#[derive(Clone)]
pub(crate) struct Connector {
    direct: HttpConnector,
    /// To a proxy, over TLS when its URL says https.
    to_proxy: HttpsConnector<HttpConnector>,
    proxies: Arc<Matcher>,
}

impl Connector {
    pub fn new(
        proxies: &Proxies,
        tls: rustls::ClientConfig,
        connect_timeout: Duration,
    ) -> Result<Self, ErrorKind> {
        let mut direct = HttpConnector::new();
        direct.enforce_http(false);
        direct.set_connect_timeout(Some(connect_timeout));
        let to_proxy = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .wrap_connector(direct.clone());
        Ok(Self {
            direct,
            to_proxy,
            proxies: Arc::new(proxies.matcher()?),
        })
    }

    /// `request` as a proxy of plain http takes it: with the proxy's credentials, and
    /// without user info in its URL, which goes to the proxy whole. Other requests are
    /// left as they are: a tunnel's proxy never sees them.
    pub fn prepare(&self, request: &mut Request<Bytes>) {
        if request.uri().scheme() != Some(&Scheme::HTTP) {
            return;
        }
        let Some(proxy) = self.proxies.intercept(request.uri()) else {
            return;
        };
        if let Some(credentials) = proxy.basic_auth() {
            request
                .headers_mut()
                .insert(PROXY_AUTHORIZATION, credentials.clone());
        }
        if let Some(authority) = request.uri().authority()
            && let Some((_, host)) = authority.as_str().rsplit_once('@')
        {
            let mut parts = request.uri().clone().into_parts();
            parts.authority = host.parse().ok();
            if let Ok(uri) = Uri::from_parts(parts) {
                *request.uri_mut() = uri;
            }
        }
    }
}

type Connecting = Pin<Box<dyn Future<Output = Result<Stream, BoxError>> + Send>>;

impl Service<Uri> for Connector {
    type Response = Stream;
    type Error = BoxError;
    type Future = Connecting;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        // Both connectors are always ready: they only hold settings.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, destination: Uri) -> Connecting {
        let Some(proxy) = self.proxies.intercept(&destination) else {
            let connecting = self.direct.call(destination);
            return Box::pin(async move {
                let io = MaybeHttpsStream::Http(connecting.await?);
                Ok(Stream { io, forward: false })
            });
        };
        let through = address(proxy.uri());
        let failed = move |source: BoxError| -> BoxError {
            Box::new(ThroughProxy {
                proxy: through,
                source,
            })
        };
        if destination.scheme() == Some(&Scheme::HTTPS) {
            let mut tunnel = Tunnel::new(proxy.uri().clone(), self.to_proxy.clone());
            if let Some(credentials) = proxy.basic_auth() {
                tunnel = tunnel.with_auth(credentials.clone());
            }
            return Box::pin(async move {
                let io = tunnel
                    .oneshot(destination)
                    .await
                    .map_err(|e| failed(e.into()))?;
                Ok(Stream { io, forward: false })
            });
        }
        let connecting = self.to_proxy.clone().oneshot(proxy.uri().clone());
        Box::pin(async move {
            let io = connecting.await.map_err(failed)?;
            Ok(Stream { io, forward: true })
        })
    }
}

/// A connection to a destination, a tunnel to it, or a proxy that forwards its requests.
pub(crate) struct Stream {
    io: MaybeHttpsStream<TokioIo<TcpStream>>,
    /// The connection is to a proxy that forwards each request: hyper then writes a
    /// request's whole URL, not only its path.
    forward: bool,
}

impl Connection for Stream {
    fn connected(&self) -> Connected {
        self.io.connected().proxy(self.forward)
    }
}

impl hyper::rt::Read for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_read(cx, buf)
    }
}

impl hyper::rt::Write for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proxies(https: &str, no: &str) -> Proxies {
        Proxies {
            https: https.to_owned(),
            no: no.to_owned(),
            ..Proxies::default()
        }
    }

    #[test]
    fn a_proxy_is_shown_without_its_credentials() {
        let shown = format!("{:?}", proxies("http://user:s3cret@proxy.example:3128", ""));
        assert!(shown.contains("http://proxy.example:3128"), "{shown}");
        assert!(
            !shown.contains("s3cret") && !shown.contains("user"),
            "{shown}"
        );
    }

    #[test]
    fn a_socks_or_unreadable_proxy_is_a_configuration_error_that_names_the_variable_only() {
        for value in [
            "socks5://user:s3cret@proxy:1080",
            "http://user:s3cret@pro xy",
        ] {
            let Err(ErrorKind::Config { message }) = proxies(value, "").matcher() else {
                panic!("{value} was taken");
            };
            assert!(message.contains("HTTPS_PROXY"), "{message}");
            assert!(!message.contains("s3cret"), "{message}");
        }
        assert!(
            proxies("proxy:3128", "").matcher().is_ok(),
            "http is implied"
        );
    }

    #[test]
    fn plain_http_requests_to_a_proxy_carry_its_credentials_and_no_user_info() {
        let tls = super::super::tls::client_config(&[], false).expect("TLS");
        let connector = Connector::new(
            &Proxies {
                http: "http://user:s3cret@proxy:3128".to_owned(),
                no: "direct.example".to_owned(),
                ..Proxies::default()
            },
            tls,
            Duration::from_secs(1),
        )
        .expect("a connector");
        let request = |uri: &str| Request::get(uri).body(Bytes::new()).expect("a request");

        let mut forwarded = request("http://me:pw@keystone:5000/v3");
        connector.prepare(&mut forwarded);
        assert_eq!(forwarded.uri(), "http://keystone:5000/v3");
        let credentials = forwarded.headers().get(PROXY_AUTHORIZATION);
        assert_eq!(credentials.expect("credentials"), "Basic dXNlcjpzM2NyZXQ=");

        for uri in [
            "https://me:pw@keystone/v3",
            "http://me:pw@direct.example/v3",
        ] {
            let mut untouched = request(uri);
            connector.prepare(&mut untouched);
            assert_eq!(untouched.uri(), uri);
            assert!(untouched.headers().is_empty(), "{uri}");
        }
    }
}
