//! An object kept deflated in its store, and decoded where it is read: what a store of
//! ten thousand VirtualMachines holds instead of each object as the watch decoded it.
//!
//! A VirtualMachine as kube decodes it takes about 4 KB of heap in some fifty
//! allocations (a map node each for its labels and annotations, a string per field);
//! its JSON deflated takes about 800 bytes. Each read decodes: a reconcile its object, a
//! group or LoadBalancer its members. That is the price, in CPU, of the memory
//! (docs/src/development/fleet-size.md).
//!
//! [`Packed`] is a kind of its own to kube: the watch decodes each object straight into
//! it (the object is trimmed as every store's is, then deflated), the reflector stores
//! it, and the controller reconciles it. It keeps in the clear only what the watch, the
//! store and the key index read: name, namespace, UID, resourceVersion, and its keys.

use std::borrow::Cow;
use std::cell::RefCell;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use miniz_oxide::inflate::TINFLStatus;
use miniz_oxide::inflate::core::inflate_flags::TINFL_FLAG_USING_NON_WRAPPING_OUTPUT_BUF;
use miniz_oxide::inflate::core::{DecompressorOxide, decompress};
use serde::de::{DeserializeOwned, Deserializer, Error as _};
use serde::{Deserialize, Serialize};

use super::index::Keyed;
use super::stream::trim;

/// Deflate's fastest level: a VirtualMachine's 1.5 KB of JSON to about 800 bytes; the
/// slower levels save a few percent more.
const LEVEL: u8 = 1;

/// Why a packed object could not be read back.
#[derive(Debug, thiserror::Error)]
pub enum UnpackError {
    #[error("the stored copy of {kind} {key} does not inflate: {reason}")]
    Inflate {
        kind: String,
        key: String,
        reason: String,
    },
    #[error("the stored copy of {kind} {key} does not decode: {source}")]
    Decode {
        kind: String,
        key: String,
        source: serde_json::Error,
    },
}

/// `K` deflated, with what its store and index read beside it.
pub struct Packed<K> {
    metadata: ObjectMeta,
    keys: Box<[String]>,
    deflated: Box<[u8]>,
    /// The JSON's length: it is inflated into a buffer of that size, not grown to it.
    json_len: u32,
    kind: PhantomData<fn() -> K>,
}

impl<K> Packed<K>
where
    K: Resource<DynamicType = ()> + Serialize + DeserializeOwned + Keyed,
{
    /// `obj`, packed.
    pub fn pack(obj: &K) -> Result<Self, serde_json::Error> {
        let json = serde_json::to_vec(obj)?;
        let json_len =
            u32::try_from(json.len()).map_err(<serde_json::Error as serde::ser::Error>::custom)?;
        let meta = obj.meta();
        Ok(Self {
            metadata: ObjectMeta {
                name: meta.name.clone(),
                namespace: meta.namespace.clone(),
                uid: meta.uid.clone(),
                resource_version: meta.resource_version.clone(),
                ..ObjectMeta::default()
            },
            keys: obj.keys().into_boxed_slice(),
            deflated: miniz_oxide::deflate::compress_to_vec(&json, LEVEL).into_boxed_slice(),
            json_len,
            kind: PhantomData,
        })
    }

    /// The object as it was packed.
    pub fn unpack(&self) -> Result<K, UnpackError> {
        let kind = || K::kind(&()).into_owned();
        let key = || {
            format!(
                "{}/{}",
                self.metadata.namespace.as_deref().unwrap_or_default(),
                self.metadata.name.as_deref().unwrap_or_default()
            )
        };
        let json = inflate(&self.deflated, self.json_len as usize).map_err(|status| {
            UnpackError::Inflate {
                kind: kind(),
                key: key(),
                reason: damage(status).to_owned(),
            }
        })?;
        serde_json::from_slice(&json).map_err(|source| UnpackError::Decode {
            kind: kind(),
            key: key(),
            source,
        })
    }
}

thread_local! {
    /// A decompressor per thread, reset for each object: a new one would be 10 KB to
    /// allocate and zero for every read.
    static INFLATER: RefCell<Box<DecompressorOxide>> = RefCell::new(Box::default());
}

/// `deflated` (raw deflate) inflated, exactly `len` bytes.
fn inflate(deflated: &[u8], len: usize) -> Result<Vec<u8>, TINFLStatus> {
    let mut out = vec![0; len];
    INFLATER.with_borrow_mut(|inflater| {
        inflater.init();
        let (status, _, written) = decompress(
            inflater,
            deflated,
            &mut out,
            0,
            TINFL_FLAG_USING_NON_WRAPPING_OUTPUT_BUF,
        );
        match status {
            TINFLStatus::Done if written == len => Ok(out),
            // `Done` short of `len` as well: `damage` says the length is wrong
            other => Err(other),
        }
    })
}

/// What is wrong with deflated data `inflate` refused.
fn damage(status: TINFLStatus) -> &'static str {
    match status {
        TINFLStatus::Done | TINFLStatus::HasMoreOutput => "its length is not the one recorded",
        TINFLStatus::NeedsMoreInput | TINFLStatus::FailedCannotMakeProgress => "it ends early",
        _ => "it is not deflate data",
    }
}

/// Each of `packed` unpacked, as [`unpacked_one`] does it.
pub fn unpacked<K>(packed: &[Arc<Packed<K>>]) -> Vec<Arc<K>>
where
    K: Resource<DynamicType = ()> + Serialize + DeserializeOwned + Keyed,
{
    packed.iter().filter_map(|p| unpacked_one(p)).collect()
}

/// `packed` unpacked; one that does not unpack is logged and read as absent (the store
/// holds only what [`Packed::pack`] wrote, so it would be a defect, not a state).
pub fn unpacked_one<K>(packed: &Packed<K>) -> Option<Arc<K>>
where
    K: Resource<DynamicType = ()> + Serialize + DeserializeOwned + Keyed,
{
    match packed.unpack() {
        Ok(obj) => Some(Arc::new(obj)),
        Err(error) => {
            tracing::error!(%error, "a cached object is left out of a read");
            None
        }
    }
}

/// Decodes `K` as the API server sends it, trims it as every store does, and packs it.
impl<'de, K> Deserialize<'de> for Packed<K>
where
    K: Resource<DynamicType = ()> + Serialize + DeserializeOwned + Keyed,
{
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut obj = K::deserialize(deserializer)?;
        trim(&mut obj);
        Self::pack(&obj).map_err(D::Error::custom)
    }
}

impl<K> Clone for Packed<K> {
    fn clone(&self) -> Self {
        Self {
            metadata: self.metadata.clone(),
            keys: self.keys.clone(),
            deflated: self.deflated.clone(),
            json_len: self.json_len,
            kind: PhantomData,
        }
    }
}

impl<K> fmt::Debug for Packed<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Packed")
            .field("namespace", &self.metadata.namespace)
            .field("name", &self.metadata.name)
            .field("deflated_bytes", &self.deflated.len())
            .finish()
    }
}

impl<K: Resource<DynamicType = ()>> Resource for Packed<K> {
    type DynamicType = ();
    type Scope = K::Scope;

    fn kind(dt: &()) -> Cow<'_, str> {
        K::kind(dt)
    }

    fn group(dt: &()) -> Cow<'_, str> {
        K::group(dt)
    }

    fn version(dt: &()) -> Cow<'_, str> {
        K::version(dt)
    }

    fn plural(dt: &()) -> Cow<'_, str> {
        K::plural(dt)
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

impl<K> Keyed for Packed<K> {
    fn keys(&self) -> Vec<String> {
        self.keys.to_vec()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use verda_api::v1alpha1::VirtualMachine;

    fn vm() -> VirtualMachine {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "verda.linecorp.com/v1alpha1",
            "kind": "VirtualMachine",
            "metadata": {
                "name": "web-0", "namespace": "team-a", "uid": "u-1",
                "resourceVersion": "42",
                "labels": {"verda.linecorp.com/group": "web"},
                "annotations": {
                    "kubectl.kubernetes.io/last-applied-configuration": "{\"spec\":{}}",
                    "note": "kept"
                }
            },
            "spec": {"flavor": "m1.small", "image": "cirros", "ports": [{"network": "private"}]}
        }))
        .expect("a VirtualMachine")
    }

    #[test]
    fn a_packed_object_unpacks_to_the_object_the_watch_sent_less_what_every_store_drops() {
        let sent = serde_json::to_vec(&vm()).expect("json");
        let packed: Packed<VirtualMachine> = serde_json::from_slice(&sent).expect("packed");
        let back = packed.unpack().expect("unpacked");
        let mut expected = vm();
        trim(&mut expected);
        assert_eq!(
            serde_json::to_value(&back).expect("json"),
            serde_json::to_value(&expected).expect("json")
        );
        let annotations = back.metadata.annotations.expect("annotations");
        assert_eq!(annotations.keys().collect::<Vec<_>>(), ["note"]);
        assert!(packed.deflated.len() < sent.len());
    }

    #[test]
    fn a_packed_object_keeps_in_the_clear_what_its_store_and_index_read() {
        let packed = Packed::pack(&vm()).expect("packed");
        let meta = packed.meta();
        assert_eq!(meta.name.as_deref(), Some("web-0"));
        assert_eq!(meta.namespace.as_deref(), Some("team-a"));
        assert_eq!(meta.uid.as_deref(), Some("u-1"));
        assert_eq!(meta.resource_version.as_deref(), Some("42"));
        assert!(meta.labels.is_none() && meta.annotations.is_none());
        assert_eq!(packed.keys(), vm().keys());
        assert_eq!(
            Packed::<VirtualMachine>::url_path(&(), Some("team-a")),
            VirtualMachine::url_path(&(), Some("team-a"))
        );
    }

    #[test]
    fn a_damaged_copy_is_an_error_naming_the_object() {
        let mut packed = Packed::pack(&vm()).expect("packed");
        packed.deflated = vec![0xff; 8].into_boxed_slice();
        let error = packed.unpack().expect_err("damaged");
        assert!(
            error.to_string().contains("VirtualMachine team-a/web-0"),
            "{error}"
        );

        // shorter (the data goes on) and longer (the data ends first) than recorded
        for wrong in [-1, 1] {
            let mut packed = Packed::pack(&vm()).expect("packed");
            packed.json_len = packed.json_len.checked_add_signed(wrong).expect("a length");
            let error = packed.unpack().expect_err("a length not the recorded one");
            assert!(
                error
                    .to_string()
                    .ends_with("its length is not the one recorded"),
                "{wrong}: {error}"
            );
        }
    }
}
