//! The names the operator writes on objects: the published finalizers, the annotations
//! it sets and reads, the labels a group puts on its VirtualMachines.

/// Finalizer names as published by the Verda Resource Operator.
pub mod finalizers {
    pub const VIRTUAL_MACHINE: &str = "virtualmachine.verda.linecorp.com/finalizer";
    pub const VIRTUAL_MACHINE_GROUP: &str = "virtualmachinegroup.verda.linecorp.com/finalizer";
    pub const LOAD_BALANCER: &str = "loadbalancer.verda.linecorp.com/finalizer";
    pub const DNS_ZONE: &str = "dnszone.verda.linecorp.com/finalizer";
    pub const SECURITY_GROUP: &str = "securitygroup.verda.linecorp.com/finalizer";
}

/// Annotations the operator sets on objects it manages.
pub mod annotations {
    /// On a group's VirtualMachine: the Nova server group its server is scheduled into.
    pub const SERVER_GROUP: &str = "verda.linecorp.com/server-group";
    /// On a VirtualMachine chosen for removal: load balancers take it out of their
    /// pools, then the group deletes it.
    pub const DRAINING: &str = "verda.linecorp.com/draining";
    /// Set by users: `manage` (default), `skip` or `detach-on-delete`; a group's value
    /// is copied to its VirtualMachines.
    pub const RECONCILE_POLICY: &str = "verda.linecorp.com/reconcile-policy";
}

/// Labels the group controller puts on the VirtualMachines it owns.
pub mod labels {
    /// Name of the owning VirtualMachineGroup.
    pub const GROUP: &str = "verda.linecorp.com/group";
    /// Hash of the group template the VirtualMachine was created from.
    pub const TEMPLATE_HASH: &str = "verda.linecorp.com/template-hash";
    /// The replica index of a group's VirtualMachine (`<group>-<index>`), as a
    /// StatefulSet's Pods carry `apps.kubernetes.io/pod-index`.
    pub const INDEX: &str = "verda.linecorp.com/index";
}
