# The verda-operator image, built from source: `docker build .` or `podman build .` here.
#
# Build arguments:
#   RUST_IMAGE        the builder: a Rust toolchain (at least the workspace's rust-version),
#                     a C compiler and linker (ring and mimalloc compile C) and glibc's
#                     development files
#   RUNTIME_IMAGE     the runtime: glibc and libgcc_s as new as the builder's (the binary
#                     links them) and a CA bundle at /etc/ssl/certs/ca-certificates.crt
#                     (kube's rustls client will not start without one); no shell needed
#   PROFILE           the cargo profile, `release` unless told (CI builds `dev`)
#   CARGO_TARGET_DIR  where cargo builds; by default a cache mount kept between builds, so a
#                     rebuild compiles only what changed
# CI builds this file with podman from bases made of what its machine has, and runs the
# result: hack/image-check.sh.
ARG RUST_IMAGE=docker.io/library/rust:1.95-slim-bookworm
ARG RUNTIME_IMAGE=gcr.io/distroless/cc-debian12:nonroot

FROM ${RUST_IMAGE} AS build
ARG PROFILE=release
ARG CARGO_TARGET_DIR=/src/target
# One-shot builds: an incremental cache only costs disk; line tables keep file and line in
# a dev build's panics (CI's settings, so its warm target/ is reused).
ARG CARGO_INCREMENTAL=0
ARG CARGO_PROFILE_DEV_DEBUG=line-tables-only
WORKDIR /src
COPY . .
# Without the embedded simulator: with no cloud configured the operator says so and stops.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --locked --profile "$PROFILE" -p verda-operator --bin verda-operator \
        --no-default-features --features mimalloc \
 && if [ "$PROFILE" = dev ]; then dir=debug; else dir=$PROFILE; fi \
 && cp "$CARGO_TARGET_DIR/$dir/verda-operator" /verda-operator

FROM ${RUNTIME_IMAGE}
LABEL org.opencontainers.image.title="verda-operator" \
      org.opencontainers.image.source="https://github.com/verda-operator/verda-operator" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /verda-operator /verda-operator
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/verda-operator"]
CMD ["run"]
