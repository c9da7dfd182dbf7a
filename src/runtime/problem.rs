//! What the user must fix in an object before the operator can go on. Each is the
//! object's Ready reason while it lasts, and leaves it Stalled: no retry changes it,
//! only an edit (of the object, the Secret or ConfigMap it names, or the operator's
//! configuration) does.

macro_rules! problems {
    ($($(#[$doc:meta])* $name:ident,)*) => {
        /// A problem the user must fix; its name is the Ready reason.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Problem {
            $($(#[$doc])* $name,)*
        }

        impl Problem {
            pub const ALL: &[Problem] = &[$(Problem::$name,)*];

            /// The Ready reason.
            pub fn reason(self) -> &'static str {
                match self {
                    $(Problem::$name => stringify!($name),)*
                }
            }
        }
    };
}

problems! {
    /// The reconcile-policy annotation has a value the operator does not know.
    ReconcilePolicyInvalid,
    /// `spec.import.id` names nothing in the object's project.
    ImportNotFound,
    /// `spec.import.id` names a resource another object owns.
    ImportOwnedByAnother,
    /// The resource to import differs from the spec where the operator cannot change it.
    ImportMismatch,
    /// A group's template names a resource to import.
    TemplateImportNotAllowed,
    /// A SecurityGroup of the namespace the VirtualMachine names is not Ready yet; it
    /// clears itself once it is.
    SecurityGroupNotReady,
    /// The ConfigMap or Secret `spec.initScript` names, or its key, does not exist.
    InitScriptNotFound,
    /// The init script is not UTF-8 text.
    InitScriptInvalid,
    /// The init script is larger than Nova takes.
    InitScriptTooLarge,
    /// No `loadBalancer.vipSubnets` rule matches, and the spec names no subnet.
    VipSubnetNotConfigured,
    /// `spec.serviceType` is not in the operator's `loadBalancer.flavors`.
    ServiceTypeUnknown,
    /// `spec.bootVolume.size` is less than the image's `min_disk`.
    BootVolumeTooSmall,
    /// A group's rollout made no progress within `progressDeadlineSeconds`.
    ProgressDeadlineExceeded,
    /// More of a group's replicas are unhealthy than `autoHealing.maxUnhealthy` allows.
    TooManyUnhealthy,
    /// A group's `spec.addresses` names no network of its template, or has no address
    /// for an index.
    AddressesInvalid,
    /// A Secret a terminated-https port names (`tls.secretName`, `tls.sniSecretNames`)
    /// does not exist.
    TLSSecretNotFound,
    /// Such a Secret is not `kubernetes.io/tls`, or its certificate or key cannot be read.
    TLSSecretInvalid,
    /// Such a Secret's key is not its certificate's.
    TLSKeyMismatch,
    /// Such a Secret's certificate expired (or is not valid yet).
    TLSCertificateExpired,
    /// A DNSZone's name is a zone of Designate the operator did not make for it: made by
    /// hand, by another object, or in another project.
    ZoneOwnedByAnother,
}

impl Problem {
    /// Whether `reason` is one of these.
    pub fn is_reason(reason: &str) -> bool {
        Self::ALL.iter().any(|p| p.reason() == reason)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_problem_is_known_by_its_reason() {
        assert_eq!(Problem::ImportMismatch.reason(), "ImportMismatch");
        assert!(Problem::ALL.iter().all(|p| Problem::is_reason(p.reason())));
        assert!(!Problem::is_reason("Provisioning"));
    }
}
