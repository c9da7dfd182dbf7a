//! Version `v1alpha1`: VirtualMachine, VirtualMachineGroup, LoadBalancer, DNSZone and
//! SecurityGroup.

mod autoscaling;
mod credentials;
mod dns;
mod dns_zone;
mod init_script;
mod lifecycle;
mod load_balancer;
pub mod names;
mod network_ports;
mod rollout;
mod rules;
mod security_group;
mod virtual_machine;
mod virtual_machine_group;
mod volumes;
mod zones;

pub use autoscaling::{
    AUTOSCALER_FIELD_MANAGER, Autoscaling, AutoscalingMetric, AutoscalingStatus, ConnectionTarget,
    LoadBalancerMetric, MetricStatus, PrometheusMetric, ScalingBehavior, ScalingRules,
    ScalingSchedule,
};
pub use credentials::CloudCredentialsRef;
pub use dns::{DnsAddress, DnsName, DnsRecordStatus, GroupDnsName};
pub use dns_zone::{DNSZone, DnsZoneSpec, DnsZoneStatus};
pub use init_script::{InitScript, KeySelector};
pub use lifecycle::{Import, ReconcilePolicy};
pub use load_balancer::{
    Algorithm, CertificateStatus, HealthMonitor, HttpMethod, InsertHeaders, ListenerTimeouts,
    ListenerTls, LoadBalancer, LoadBalancerPort, LoadBalancerSpec, LoadBalancerStatus,
    MAX_TIMEOUT_MS, MemberStatus, MonitorProtocol, PersistenceType, PortStatus, Protocol,
    RealServers, SessionPersistence, VipType, WeightedGroup, timeout_millis,
};
pub use network_ports::{
    AddressPair, FloatingIpSpec, GroupAddresses, GroupNetworkRetention, NetworkRetention, PortSpec,
    PortStatus as NetworkPortStatus,
};
pub use rollout::{AutoHealing, ReplicaHealth, RollingUpdate, RunStrategy, scaled};
pub use security_group::{
    AddressGroupStatus, EtherType, MAX_RULES, RuleDirection, RulePeer, RuleStatus, SecurityGroup,
    SecurityGroupRule, SecurityGroupSpec, SecurityGroupStatus,
};
pub use virtual_machine::{
    Resolution, ResolvedReferences, ServerFailure, VirtualMachine, VirtualMachineAddress,
    VirtualMachineSpec, VirtualMachineStatus,
};
pub use virtual_machine_group::{
    HaPolicy, UpdateStrategy, VirtualMachineGroup, VirtualMachineGroupSpec,
    VirtualMachineGroupStatus,
};
pub use volumes::{
    BootVolume, DataVolume, GroupVolumeRetention, MAX_VOLUME_GIB, Retention, VolumeRetention,
    VolumeStatus,
};

pub use zones::{GroupZones, ZoneSpread, ZoneStatus};

pub use names::{annotations, finalizers, labels};
