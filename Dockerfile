# Multi-stage build: a static (musl) release binary, without the embedded simulator, in a
# distroless, non-root image.
FROM rust:1.95-alpine AS build
RUN apk add --no-cache musl-dev
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked --bin verda-operator --no-default-features --features mimalloc \
    && cp target/release/verda-operator /verda-operator

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /verda-operator /verda-operator
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/verda-operator"]
CMD ["run"]
