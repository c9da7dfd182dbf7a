//! The operator's integration tests, one binary: each module was a test target of its
//! own, and linking one binary instead of forty is most of what an edit costs to
//! test. Select a group by module, e.g. `cargo test --test it e2e_load_balancer::`.

mod cloud_support;
mod sim_support;
mod support;

mod bench_scale;
mod cli_run;
mod cli_simulate;
mod cloud_block_storage;
mod cloud_compute;
mod cloud_config;
mod cloud_loadbalancing;
mod cloud_resilience;
mod cloud_secrets;
mod crd_generation;
mod crd_validation;
mod deploy_manifests;
mod e2e_budget;
mod e2e_cloud_view;
mod e2e_crash_safety;
mod e2e_events;
mod e2e_faults;
mod e2e_gitops;
mod e2e_lifecycle;
mod e2e_load_balancer;
mod e2e_metrics;
mod e2e_rollout;
mod e2e_scope;
mod e2e_shards;
mod e2e_shared_clusters;
mod e2e_upgrade;
mod e2e_virtual_machine;
mod e2e_virtual_machine_group;
mod e2e_virtual_machine_lifecycle;
mod e2e_volumes;
mod gitops_health;
mod http_endpoints;
mod leader_election;
mod real_chaos;
mod real_lifecycle;
mod real_monitoring;
mod real_shards;
mod real_shared_clusters;
mod real_systems;
mod real_upgrade;
mod real_volumes;
mod sim_block_storage;
mod sim_compute;
mod sim_faults;
mod sim_identity;
mod sim_load_balancer;
mod sim_network;
mod sim_schema;
mod sim_serve;
mod sim_throughput;
