//! A forward proxy on 127.0.0.1 for the cloud client's tests, over plain TCP or TLS: it
//! opens CONNECT tunnels and passes on plain http requests sent to it whole, each
//! connection byte for byte once its first request is read, and it records what it was
//! asked for. Also the simulator behind TLS with its catalog naming https endpoints, so
//! that Nova, not only Keystone, is reached over https.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;
use verda_operator::sim::Simulator;

/// What the proxy was asked for, in order.
#[derive(Default)]
struct Seen {
    /// The `host:port` of each CONNECT.
    tunnels: Vec<String>,
    /// The target of each connection's first request sent whole (`http://host:port/...`).
    forwarded: Vec<String>,
    /// Each first request's `Proxy-Authorization`, if any.
    credentials: Vec<String>,
}

pub struct Proxy {
    /// `http://127.0.0.1:PORT` (`https://localhost:PORT` over TLS).
    pub url: String,
    seen: Arc<Mutex<Seen>>,
    task: JoinHandle<()>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Proxy {
    pub async fn start() -> Proxy {
        Self::serve(None).await
    }

    /// A proxy reached over TLS, with the test CA's certificate for `localhost`.
    pub async fn start_tls() -> Proxy {
        Self::serve(Some(acceptor())).await
    }

    async fn serve(tls: Option<TlsAcceptor>) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let url = match tls {
            Some(_) => format!("https://localhost:{port}"),
            None => format!("http://127.0.0.1:{port}"),
        };
        let seen = Arc::new(Mutex::new(Seen::default()));
        let task = tokio::spawn({
            let seen = seen.clone();
            async move {
                while let Ok((tcp, _)) = listener.accept().await {
                    let (tls, seen) = (tls.clone(), seen.clone());
                    tokio::spawn(async move {
                        match tls {
                            Some(tls) => {
                                if let Ok(client) = tls.accept(tcp).await {
                                    pass_on(client, &seen).await;
                                }
                            }
                            None => pass_on(tcp, &seen).await,
                        }
                    });
                }
            }
        });
        Proxy { url, seen, task }
    }

    /// The `host:port` of each CONNECT so far.
    pub fn tunnels(&self) -> Vec<String> {
        self.seen.lock().unwrap().tunnels.clone()
    }

    /// The target of each forwarding connection's first request so far.
    pub fn forwarded(&self) -> Vec<String> {
        self.seen.lock().unwrap().forwarded.clone()
    }

    /// The `Proxy-Authorization` of each first request that carried one.
    pub fn credentials(&self) -> Vec<String> {
        self.seen.lock().unwrap().credentials.clone()
    }
}

/// Reads the first request's head, records it, and joins the client to where it asked
/// to go.
async fn pass_on<S>(mut client: S, seen: &Mutex<Seen>)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut head = Vec::new();
    let mut chunk = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match client.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&chunk[..n]),
        }
    }
    let text = String::from_utf8_lossy(&head).into_owned();
    let mut words = text.split_whitespace();
    let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let credentials = text
        .lines()
        .find_map(|l| {
            l.strip_prefix("Proxy-Authorization: ")
                .or_else(|| l.strip_prefix("proxy-authorization: "))
        })
        .map(str::to_owned);
    let connect = method == "CONNECT";
    let host = match connect {
        true => target.to_owned(),
        false => {
            let rest = target.strip_prefix("http://").unwrap_or(target);
            rest.split('/').next().unwrap_or("").to_owned()
        }
    };
    {
        let mut seen = seen.lock().unwrap();
        match connect {
            true => seen.tunnels.push(host.clone()),
            false => seen.forwarded.push(target.to_owned()),
        }
        seen.credentials.extend(credentials);
    }
    let Ok(mut upstream) = TcpStream::connect(&host).await else {
        let _ = client.write_all(b"HTTP/1.1 502 Bad Gateway\r\n\r\n").await;
        return;
    };
    let joined = match connect {
        true => {
            client
                .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                .await
        }
        // The request goes on as it came, its target whole: hyper's server takes that.
        false => upstream.write_all(&head).await,
    };
    if joined.is_ok() {
        let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
    }
}

fn fixtures() -> PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/cloud_support/tls")
}

/// The test CA, which signed the certificate [`acceptor`] presents.
pub fn test_ca() -> PathBuf {
    fixtures().join("ca.pem")
}

/// TLS with the test CA's certificate for `localhost` (valid until 2126).
fn acceptor() -> TlsAcceptor {
    use tokio_rustls::rustls::pki_types::pem::PemObject;
    use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

    let certs = CertificateDer::pem_file_iter(fixtures().join("server.pem"))
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let key = PrivateKeyDer::from_pem_file(fixtures().join("server.key")).unwrap();
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let config = tokio_rustls::rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
    TlsAcceptor::from(Arc::new(config))
}

/// The simulator `sim` behind TLS at `https://localhost:PORT`, every answer's URLs of
/// the simulator rewritten to name it: the catalog then sends Nova's calls over https
/// too.
pub struct HttpsCloud {
    /// Keystone's URL through the front.
    pub auth_url: String,
    /// `localhost:PORT`, as a tunnel to it is asked for.
    pub host: String,
    task: JoinHandle<()>,
}

impl Drop for HttpsCloud {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[derive(Clone)]
struct Front {
    plain: String,
    https: String,
    http: reqwest::Client,
}

impl HttpsCloud {
    pub async fn start(sim: &Simulator) -> HttpsCloud {
        let tcp = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let host = format!("localhost:{}", tcp.local_addr().unwrap().port());
        let front = Front {
            plain: format!("http://{}", sim.addr()),
            https: format!("https://{host}"),
            http: reqwest::Client::new(),
        };
        let auth_url = sim.auth_url().replace(&front.plain, &front.https);
        let app = axum::Router::new().fallback(forward).with_state(front);
        let listener = TlsListener {
            tcp,
            tls: acceptor(),
        };
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        HttpsCloud {
            auth_url,
            host,
            task,
        }
    }
}

/// One request passed on to the simulator, its answer's URLs rewritten.
async fn forward(State(front): State<Front>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, usize::MAX).await.unwrap();
    let target = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let mut headers = parts.headers;
    headers.remove(http::header::HOST);
    let answer = front
        .http
        .request(parts.method, format!("{}{target}", front.plain))
        .headers(headers)
        .body(body)
        .send()
        .await
        .unwrap();
    let status = answer.status();
    let mut headers = answer.headers().clone();
    headers.remove(http::header::CONTENT_LENGTH);
    headers.remove(http::header::TRANSFER_ENCODING);
    let text = answer.text().await.unwrap();
    (status, headers, text.replace(&front.plain, &front.https)).into_response()
}

/// Accepts TLS connections for axum, one handshake at a time.
struct TlsListener {
    tcp: TcpListener,
    tls: TlsAcceptor,
}

impl axum::serve::Listener for TlsListener {
    type Io = tokio_rustls::server::TlsStream<TcpStream>;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let Ok((tcp, addr)) = self.tcp.accept().await else {
                continue;
            };
            if let Ok(tls) = self.tls.accept(tcp).await {
                return (tls, addr);
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.tcp.local_addr()
    }
}
