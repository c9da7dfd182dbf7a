//! The Prometheus the operator's configuration names (`prometheus.url`): instant
//! queries (`GET /api/v1/query`), a vector's samples summed. The bearer token, when
//! there is one, is read from its file at each query (a mounted Secret rotates) and
//! never written anywhere.

use std::path::PathBuf;
use std::time::Duration;

use bytes::Bytes;
use http::header::{ACCEPT, AUTHORIZATION};
use serde::Deserialize;

use crate::cloud::http_clients::{self, HttpClient, Settings};
use crate::cloud::proxy::Proxies;
use crate::config::PrometheusConfig;

/// How long a query may take.
const QUERY_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a query gave no value, for the group's `ScalingActive` condition.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum QueryError {
    #[error("no Prometheus is configured: set prometheus.url in the operator's configuration")]
    NotConfigured,
    #[error("Prometheus at {url} did not answer: {message}")]
    Unreachable { url: String, message: String },
    #[error("Prometheus refused the query (HTTP {status}): {message}")]
    Refused { status: u16, message: String },
    #[error("the query returned no sample: check its labels, or that its series exist")]
    NoSample,
    #[error("the query's value is not a number: {0}")]
    NotANumber(String),
    #[error("the bearer token file {path} cannot be read: {message}")]
    Token { path: String, message: String },
}

/// A configured Prometheus.
pub struct Prometheus {
    url: String,
    token_file: Option<PathBuf>,
    client: HttpClient,
}

impl Prometheus {
    pub fn new(config: &PrometheusConfig) -> Result<Self, String> {
        let settings = Settings {
            roots: Vec::new(),
            insecure: false,
            request_timeout: QUERY_TIMEOUT,
            connect_timeout: QUERY_TIMEOUT,
            proxies: Proxies::from_env(),
        };
        let client = http_clients::client(&settings)
            .map_err(|e| format!("cannot build the Prometheus client: {e}"))?;
        Ok(Self {
            url: config.url.trim_end_matches('/').to_owned(),
            token_file: config.bearer_token_file.clone(),
            client,
        })
    }

    /// The query's value: a scalar, or the sum of a vector's samples.
    pub async fn query(&self, promql: &str) -> Result<f64, QueryError> {
        let mut url = url::Url::parse(&format!("{}/api/v1/query", self.url)).map_err(|e| {
            QueryError::Unreachable {
                url: self.url.clone(),
                message: e.to_string(),
            }
        })?;
        url.query_pairs_mut().append_pair("query", promql);
        let mut request = http::Request::get(url.as_str()).header(ACCEPT, "application/json");
        if let Some(path) = &self.token_file {
            let token = std::fs::read_to_string(path).map_err(|e| QueryError::Token {
                path: path.display().to_string(),
                message: e.to_string(),
            })?;
            request = request.header(AUTHORIZATION, format!("Bearer {}", token.trim()));
        }
        let request = request
            .body(Bytes::new())
            .map_err(|e| QueryError::Refused {
                status: 0,
                message: e.to_string(),
            })?;
        let reply = self
            .client
            .send(request)
            .await
            .map_err(|e| QueryError::Unreachable {
                url: self.url.clone(),
                message: e.message,
            })?;
        value_of(reply.status.as_u16(), &reply.body)
    }
}

#[derive(Deserialize)]
struct Answer {
    status: String,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    data: Option<Data>,
}

#[derive(Deserialize)]
#[serde(tag = "resultType", content = "result", rename_all = "lowercase")]
enum Data {
    Vector(Vec<Sample>),
    Scalar((f64, String)),
    Matrix(serde::de::IgnoredAny),
    String(serde::de::IgnoredAny),
}

#[derive(Deserialize)]
struct Sample {
    value: (f64, String),
}

/// The value of an answer to `/api/v1/query`.
fn value_of(status: u16, body: &[u8]) -> Result<f64, QueryError> {
    let answer: Answer = serde_json::from_slice(body).map_err(|e| QueryError::Refused {
        status,
        message: format!("not a Prometheus answer: {e}"),
    })?;
    if answer.status != "success" || !(200..300).contains(&status) {
        return Err(QueryError::Refused {
            status,
            message: answer.error.unwrap_or(answer.status),
        });
    }
    let texts: Vec<String> = match answer.data {
        Some(Data::Vector(samples)) => samples.into_iter().map(|s| s.value.1).collect(),
        Some(Data::Scalar((_, v))) => vec![v],
        Some(Data::Matrix(_) | Data::String(_)) | None => {
            return Err(QueryError::NotANumber(
                "an instant query must give a vector or a scalar (a range vector or a string was returned)".to_owned(),
            ));
        }
    };
    if texts.is_empty() {
        return Err(QueryError::NoSample);
    }
    let mut sum = 0.0;
    for text in texts {
        match text.parse::<f64>() {
            Ok(v) if v.is_finite() => sum += v,
            _ => return Err(QueryError::NotANumber(text)),
        }
    }
    Ok(sum)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_vector_is_summed_and_a_scalar_read() {
        let vector = br#"{"status":"success","data":{"resultType":"vector","result":[
            {"metric":{"i":"a"},"value":[1.5,"20"]},{"metric":{"i":"b"},"value":[1.5,"30.5"]}]}}"#;
        assert_eq!(value_of(200, vector), Ok(50.5));
        let scalar = br#"{"status":"success","data":{"resultType":"scalar","result":[1.5,"7"]}}"#;
        assert_eq!(value_of(200, scalar), Ok(7.0));
    }

    #[test]
    fn no_sample_an_error_or_nan_is_no_value_with_its_reason() {
        let empty = br#"{"status":"success","data":{"resultType":"vector","result":[]}}"#;
        assert_eq!(value_of(200, empty), Err(QueryError::NoSample));
        let bad = br#"{"status":"error","errorType":"bad_data","error":"parse error at char 5"}"#;
        assert_eq!(
            value_of(400, bad),
            Err(QueryError::Refused {
                status: 400,
                message: "parse error at char 5".to_owned()
            })
        );
        let nan = br#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"NaN"]}]}}"#;
        assert_eq!(
            value_of(200, nan),
            Err(QueryError::NotANumber("NaN".to_owned()))
        );
        let matrix = br#"{"status":"success","data":{"resultType":"matrix","result":[]}}"#;
        assert!(matches!(
            value_of(200, matrix),
            Err(QueryError::NotANumber(_))
        ));
    }
}
