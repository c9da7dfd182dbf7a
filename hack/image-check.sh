#!/usr/bin/env bash
# Builds the top-level Dockerfile with podman, from base images made of what this machine has (no
# registry), and proves the image runs:
#   1. assembles the Dockerfile's two bases as local images (podman import):
#      RUST_IMAGE     an empty rootfs whose RUN step sees, bind-mounted at their own paths, the host's
#                     C toolchain and libraries (/usr's parts, read-only), its Rust toolchain (the sysroot of
#                     `rustc`, read-only) and its CARGO_HOME (the crates cargo already downloaded);
#      RUNTIME_IMAGE  glibc's and libgcc_s's shared libraries (Debian's libc6 and libgcc-s1, which
#                     gcr.io/distroless/cc holds too) and the system CA bundle;
#   2. builds the Dockerfile with PROFILE (private vfs storage under target/image-storage; the RUN step
#      under buildah's chroot isolation, which needs no OCI runtime), this checkout's target/PROFILE-dir
#      mounted at its own path as the builder's CARGO_TARGET_DIR: after a host build of the same profile
#      and features (`cargo build -p verda-operator --no-default-features --features mimalloc`, with
#      CARGO_INCREMENTAL=0 CARGO_PROFILE_DEV_DEBUG=line-tables-only as CI) cargo finds everything fresh
#      and the build takes seconds; it says how long it took and how many crates cargo compiled;
#   3. finds an OCI runtime setup that can start containers here (crun/runc, with/without cgroups);
#   4. runs the image's `run` with no cloud configured, which must stop saying the build has no embedded
#      simulator; starts verda-test-apiserver and the simulator of VERDA_CLOUD_SIMULATOR on the host
#      (127.0.0.1, free ports) and runs the image against them (`run --kubeconfig ... --listen
#      127.0.0.1:PORT`, --network host, read-only root, no capabilities), checks /healthz, /readyz and
#      /metrics answer and that PID 1 runs as uid 65532, then stops it (SIGTERM, expects exit 0).
#   5. If no image can be built or no container started, falls back: builds the binary on the host with
#      the Dockerfile's cargo command (if that fails too, the source is at fault: exit 1), runs it
#      chrooted into the runtime base's rootfs as uid 65532 against the same API server and simulator,
#      and says which part it could not do and why.
# Everything it creates (container, images, storage, host processes) is removed on exit; target/ keeps
# what cargo built (the builder's binary replaces target/debug/verda-operator: build again for the
# embedded simulator).
#
# Usage: hack/image-check.sh [PROFILE]   (cargo profile for the image, default dev; `release` as users)
# Env:   VERDA_TEST_APISERVER=path   test API server binary (default target/debug/, then target/release/)
#        VERDA_CLOUD_SIMULATOR=path  an operator binary with the simulator, the image's cloud (default
#                                    target/debug/verda-operator; copied before the build replaces it)
#        IMAGE_CHECK_BUILD_TIMEOUT=s bound of the image build (default 1500: a cold build compiles
#                                    every dependency, minutes on 2 cores; a warm one takes seconds)
#        IMAGE_CHECK_RUNTIMES="crun| runc| crun|--cgroups=disabled"  runtime setups to try, in order
#        IMAGE_CHECK_NO_INSTALL=1   never apt-get install missing packages; fail instead
#        IMAGE_CHECK_ALLOW_FALLBACK=1  exit 0 (not 3) when only the chroot fallback could be checked
# Exit: 0 image built and run; 1 a check failed; 3 containers cannot build/run here, chroot fallback passed.
# Needs root, Debian/Ubuntu (dpkg for the runtime base, apt-get for the package step) and a Rust
# toolchain. Bounded: the build by IMAGE_CHECK_BUILD_TIMEOUT, the rest < 5 min once packages are installed.
set -euo pipefail

START=$SECONDS
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PROFILE=${1:-dev}
[[ $PROFILE == dev ]] && PROFILE_DIR=debug || PROFILE_DIR=$PROFILE
IMAGE_DIR=$REPO/target/image
STORE=$REPO/target/image-storage
IMAGE=localhost/verda-operator:image-check-$$
BUILDER_BASE=localhost/verda-image-check-builder:$$
RUNTIME_BASE=localhost/verda-image-check-runtime:$$
CNAME=verda-image-check-$$
BUILD_TIMEOUT=${IMAGE_CHECK_BUILD_TIMEOUT:-1500}
# CI's settings (.ci/run), given to the builder too, so a host build's artifacts are the builder's.
export CARGO_INCREMENTAL=${CARGO_INCREMENTAL:-0}
export CARGO_PROFILE_DEV_DEBUG=${CARGO_PROFILE_DEV_DEBUG:-line-tables-only}
# The Dockerfile's cargo command, run on the host by the fallback.
CARGO_BUILD=(cargo build --locked --profile "$PROFILE" -p verda-operator --bin verda-operator
    --no-default-features --features mimalloc)

log() { printf '[image-check %3ds] %s\n' $((SECONDS - START)) "$*" >&2; }
die() {
    log "FAIL: $*"
    exit 1
}

[[ $(id -u) == 0 ]] || die "must run as root (rootful podman, chroot); rootless podman is not set up here"
[[ $PROFILE =~ ^[a-z][a-z0-9_-]*$ ]] || die "'$PROFILE' is no cargo profile name"
command -v cargo >/dev/null && command -v rustc >/dev/null || die "no cargo/rustc on PATH"

# --- packages --------------------------------------------------------------------------------------------
missing=()
command -v podman >/dev/null || missing+=(podman)
command -v runc >/dev/null || missing+=(runc)
command -v crun >/dev/null || missing+=(crun)
command -v curl >/dev/null || missing+=(curl)
command -v cc >/dev/null || missing+=(gcc libc6-dev)
[[ -s /etc/ssl/certs/ca-certificates.crt ]] || missing+=(ca-certificates)
if ((${#missing[@]})); then
    [[ ${IMAGE_CHECK_NO_INSTALL:-} != 1 ]] || die "missing packages: ${missing[*]} (IMAGE_CHECK_NO_INSTALL=1)"
    command -v apt-get >/dev/null || die "missing packages ${missing[*]} and no apt-get to install them"
    log "installing ${missing[*]} (apt-get)"
    t0=$SECONDS
    export DEBIAN_FRONTEND=noninteractive
    timeout 300 apt-get update -qq || die "apt-get update failed"
    timeout 600 apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
        die "apt-get install ${missing[*]} failed"
    log "installed in $((SECONDS - t0))s; the time limits count from now"
    START=$SECONDS
fi
[[ -s /etc/ssl/certs/ca-certificates.crt ]] || die "/etc/ssl/certs/ca-certificates.crt missing (update-ca-certificates?)"
command -v dpkg >/dev/null || die "no dpkg: the runtime base is made of Debian's libc6 and libgcc-s1"

# --- scratch space and cleanup ---------------------------------------------------------------------------
RUN_DIR=$(mktemp -d /tmp/verda-image-check.XXXXXX)
chmod 755 "$RUN_DIR"
mkdir -p "$RUN_DIR/tmp"
# TMPDIR: buildah keeps the Dockerfile's cache mounts there (unused by this build: its target/ and
# CARGO_HOME are the host's), removed with RUN_DIR.
PODMAN=(env "TMPDIR=$RUN_DIR/tmp" podman --root "$STORE" --runroot "$RUN_DIR/runroot" --tmpdir "$RUN_DIR/tmp"
    --storage-driver vfs --cgroup-manager cgroupfs --events-backend none)
API_PID=
SIM_PID=
CHROOT_PID=
[[ -e /var/lib/containers ]] && VLC_EXISTED=1 || VLC_EXISTED=
CGROUPS_BEFORE=$(find /sys/fs/cgroup -maxdepth 2 -type d -name libpod_parent 2>/dev/null | sort || true)

cleanup() {
    local rc=$?
    set +e
    if [[ -n $CHROOT_PID ]]; then kill "$CHROOT_PID" 2>/dev/null; wait "$CHROOT_PID" 2>/dev/null; fi
    if [[ -d $STORE ]]; then
        timeout 30 "${PODMAN[@]}" rm -f -t 5 "$CNAME" >/dev/null 2>&1
        timeout 30 "${PODMAN[@]}" rmi -f "$IMAGE" "$BUILDER_BASE" "$RUNTIME_BASE" >/dev/null 2>&1
        if grep -qF " $STORE" /proc/self/mounts; then
            log "warning: mounts left under $STORE, not deleting it"
        else
            rm -rf "$STORE"
        fi
    fi
    if [[ -n $API_PID ]]; then kill "$API_PID" 2>/dev/null; wait "$API_PID" 2>/dev/null; fi
    if [[ -n $SIM_PID ]]; then kill -INT "$SIM_PID" 2>/dev/null; wait "$SIM_PID" 2>/dev/null; fi
    # cgroup parents that podman created during this run (empty once the container is gone)
    local d
    for d in $(find /sys/fs/cgroup -maxdepth 2 -type d -name libpod_parent 2>/dev/null | sort); do
        grep -qxF "$d" <<<"$CGROUPS_BEFORE" && continue
        find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
    done
    # podman build writes its blob-info cache to /var/lib/containers/cache whatever --root says
    [[ -n $VLC_EXISTED ]] || rm -rf /var/lib/containers
    rm -rf "$RUN_DIR" "$IMAGE_DIR"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
    python3 "$REPO/hack/free_port.py" || die "no free port found on 127.0.0.1"
}

# --- the host's binaries: test API server, simulator -----------------------------------------------------
API_BIN=${VERDA_TEST_APISERVER:-}
if [[ -z $API_BIN ]]; then
    for c in "$REPO/target/debug/verda-test-apiserver" "$REPO/target/release/verda-test-apiserver"; do
        if [[ -x $c ]]; then API_BIN=$c; break; fi
    done
fi
[[ -n $API_BIN && -x $API_BIN ]] ||
    die "no verda-test-apiserver binary${API_BIN:+ at $API_BIN} (build it: cargo build -p verda-test-apiserver)"
cp "$API_BIN" "$RUN_DIR/verda-test-apiserver"
SIM_BIN=${VERDA_CLOUD_SIMULATOR:-$REPO/target/debug/verda-operator}
# a copy: the image's build replaces target/debug/verda-operator with a binary without the simulator
[[ -x $SIM_BIN ]] && cp "$SIM_BIN" "$RUN_DIR/verda-sim" && timeout 20 "$RUN_DIR/verda-sim" simulate --help >/dev/null 2>&1 ||
    die "VERDA_CLOUD_SIMULATOR=$SIM_BIN is no operator binary with the simulator (build it: cargo build -p verda-operator)"

KUBECONFIG_FILE=$RUN_DIR/kubeconfig
start_apiserver() {
    local crd=() i
    [[ -d $REPO/config/crd/bases ]] && crd=(--crd-dir "$REPO/config/crd/bases")
    (cd "$REPO" && exec timeout 600 "$RUN_DIR/verda-test-apiserver" --kubeconfig "$KUBECONFIG_FILE" "${crd[@]}") \
        >"$RUN_DIR/apiserver.log" 2>&1 &
    API_PID=$!
    for i in $(seq 1 100); do
        [[ -s $KUBECONFIG_FILE ]] && grep -q 'serving on' "$RUN_DIR/apiserver.log" && break
        kill -0 "$API_PID" 2>/dev/null || die "verda-test-apiserver exited: $(cat "$RUN_DIR/apiserver.log")"
        sleep 0.1
    done
    [[ -s $KUBECONFIG_FILE ]] || die "verda-test-apiserver wrote no kubeconfig within 10s"
    chmod 644 "$KUBECONFIG_FILE"
    log "test API server: $(grep -o 'http://[0-9.:]*' "$RUN_DIR/apiserver.log" | head -1) ($API_BIN)"
}

# The image has no embedded simulator: its cloud is the simulator of VERDA_CLOUD_SIMULATOR on the host,
# whose clouds.yaml ($RUN_DIR/clouds.yaml) the container gets as /clouds.yaml.
CLOUD_ENV=(-e OS_CLIENT_CONFIG_FILE=/clouds.yaml -e OS_CLOUD=verda-sim)
start_cloud() {
    local port i
    # port 0: the simulator binds a port itself and writes it into the clouds.yaml
    timeout 600 "$RUN_DIR/verda-sim" simulate --listen 127.0.0.1:0 >"$RUN_DIR/clouds.yaml" 2>"$RUN_DIR/sim.log" &
    SIM_PID=$!
    for i in $(seq 1 100); do
        grep -q 'verda-sim:' "$RUN_DIR/clouds.yaml" 2>/dev/null && break
        kill -0 "$SIM_PID" 2>/dev/null || die "the host simulator exited: $(cat "$RUN_DIR/sim.log")"
        sleep 0.1
    done
    grep -q 'verda-sim:' "$RUN_DIR/clouds.yaml" || die "the host simulator printed no clouds.yaml within 10s"
    chmod 644 "$RUN_DIR/clouds.yaml"
    port=$(grep -o 'http://127.0.0.1:[0-9]*' "$RUN_DIR/clouds.yaml" | head -1)
    log "the image's cloud: the simulator on ${port#http://} ($SIM_BIN)"
}

# Waits for URL to answer 200 while the check command ($2...) succeeds; prints the body.
wait_http() {
    local url=$1 secs=$2
    shift 2
    local end=$((SECONDS + secs)) body
    while ((SECONDS < end && SECONDS < DEADLINE)); do
        if body=$(curl -fsS -m 2 "$url" 2>/dev/null); then
            printf '%s' "$body"
            return 0
        fi
        "$@" || return 2
        sleep 0.2
    done
    return 1
}

# --- 1. the bases ----------------------------------------------------------------------------------------
# RUNTIME_IMAGE: glibc and libgcc_s (what the binary links) and the CA bundle (kube's rustls client will
# not start without one, even for a plain-HTTP API server). No shell, no /etc/passwd: the user is numeric.
runtime_rootfs() {
    local root=$IMAGE_DIR/runtime-rootfs lib libs=()
    mkdir -p "$root/etc/ssl/certs"
    mapfile -t libs < <(dpkg -L libc6 libgcc-s1 | grep -E '\.so(\.[0-9]+)*$' | grep -v /gconv/)
    for lib in "${libs[@]}"; do
        [[ -f $lib ]] || continue
        mkdir -p "$root$(dirname "$lib")"
        cp -L "$lib" "$root$lib"
    done
    [[ -e $root/lib64/ld-linux-x86-64.so.2 || $(uname -m) != x86_64 ]] || die "dpkg -L libc6 lists no dynamic loader"
    cp -L /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
}

# RUST_IMAGE: an empty rootfs (with /tmp, and /bin, /lib... as the host's links into /usr) whose RUN
# steps get the host's toolchain as volumes, at their own paths; BUILD_VOLUMES are podman build's -v.
BUILD_VOLUMES=()
builder_rootfs() {
    local root=$IMAGE_DIR/builder-rootfs d
    mkdir -p "$root/tmp" "$root/usr/local"
    chmod 1777 "$root/tmp"
    # /usr's parts, not /usr: the Dockerfile's cache mount /usr/local/cargo/registry needs a writable
    # parent (this build's CARGO_HOME is the host's, so that cache stays empty)
    BUILD_VOLUMES=()
    for d in /usr/* /usr/local/*; do
        [[ $d == /usr/local || $d == /usr/local/cargo ]] && continue
        if [[ -L $d ]]; then
            ln -s "$(readlink "$d")" "$root$d"
        elif [[ -d $d ]]; then
            BUILD_VOLUMES+=(-v "$d:$d:ro")
        fi
    done
    for d in bin sbin lib lib32 lib64 libx32; do
        if [[ -L /$d ]]; then
            ln -s "$(readlink "/$d")" "$root/$d"
        elif [[ -d /$d ]]; then
            BUILD_VOLUMES+=(-v "/$d:/$d:ro")
        fi
    done
    # cc is /usr/bin/cc -> /etc/alternatives/cc -> gcc on Debian
    [[ -d /etc/alternatives ]] && BUILD_VOLUMES+=(-v /etc/alternatives:/etc/alternatives:ro)
    [[ -f /etc/ld.so.cache ]] && BUILD_VOLUMES+=(-v /etc/ld.so.cache:/etc/ld.so.cache:ro)
    [[ $SYSROOT == /usr/* ]] || BUILD_VOLUMES+=(-v "$SYSROOT:$SYSROOT:ro")
    mkdir -p "$CARGO_HOME_DIR" "$REPO/target/$PROFILE_DIR"
    BUILD_VOLUMES+=(-v "$CARGO_HOME_DIR:$CARGO_HOME_DIR" -v "$REPO/target/$PROFILE_DIR:$REPO/target/$PROFILE_DIR")
}

# imports DIR as IMAGE with the --change instructions that follow
import_rootfs() {
    local dir=$1 image=$2
    shift 2
    local out
    out=$(tar -C "$dir" -cf - . | timeout 120 "${PODMAN[@]}" import "$@" - "$image" 2>&1) ||
        die "podman import of $dir as $image failed: $(tail -3 <<<"$out")"
}

SYSROOT=$(cd "$REPO" && rustc --print sysroot) || die "rustc --print sysroot failed"
CARGO_HOME_DIR=${CARGO_HOME:-$HOME/.cargo}
RUSTC_VERSION=$(rustc --version)
mkdir -p "$STORE"
rm -rf "$IMAGE_DIR"
runtime_rootfs
builder_rootfs
import_rootfs "$IMAGE_DIR/runtime-rootfs" "$RUNTIME_BASE"
import_rootfs "$IMAGE_DIR/builder-rootfs" "$BUILDER_BASE" \
    --change "ENV PATH=$SYSROOT/bin:/usr/local/bin:/usr/bin:/bin" --change "ENV CARGO_HOME=$CARGO_HOME_DIR"
log "bases: $RUNTIME_BASE (glibc, libgcc_s, CA bundle: $(du -sh "$IMAGE_DIR/runtime-rootfs" | cut -f1)), $BUILDER_BASE ($RUSTC_VERSION at $SYSROOT, the host's /usr and $CARGO_HOME_DIR as volumes)"

# --- 2. build --------------------------------------------------------------------------------------------
BUILD_ERR=
RUN_ERR=
RUNTIME_ARGS=()
VERSION=
log "building $REPO/Dockerfile (PROFILE=$PROFILE, vfs storage in $STORE, CARGO_TARGET_DIR=$REPO/target)"
t0=$SECONDS
if ! timeout "$BUILD_TIMEOUT" "${PODMAN[@]}" build --pull=never --layers=false --isolation chroot --network host \
    --build-arg "RUST_IMAGE=$BUILDER_BASE" --build-arg "RUNTIME_IMAGE=$RUNTIME_BASE" \
    --build-arg "PROFILE=$PROFILE" --build-arg "CARGO_TARGET_DIR=$REPO/target" \
    --build-arg "CARGO_INCREMENTAL=$CARGO_INCREMENTAL" --build-arg "CARGO_PROFILE_DEV_DEBUG=$CARGO_PROFILE_DEV_DEBUG" \
    "${BUILD_VOLUMES[@]}" -f "$REPO/Dockerfile" -t "$IMAGE" "$REPO" >"$RUN_DIR/build.log" 2>&1; then
    BUILD_ERR="$(grep -v '^ *Compiling ' "$RUN_DIR/build.log" | tail -8)"
    log "podman build failed after $((SECONDS - t0))s: $BUILD_ERR"
else
    BUILD_SECS=$((SECONDS - t0))
    COMPILED=$(grep -c '^ *Compiling ' "$RUN_DIR/build.log" || true)
    SIZE=$("${PODMAN[@]}" image inspect --format '{{.Size}}' "$IMAGE")
    log "built $IMAGE in ${BUILD_SECS}s (cargo compiled $COMPILED crates in the builder): $((SIZE / 1000000)) MB"
    ((COMPILED < 10)) || log "note: the builder compiled $COMPILED crates: the host's target/$PROFILE_DIR was not" \
        "warm for this profile, features and CARGO_* settings (${CARGO_BUILD[*]})"
    [[ $("${PODMAN[@]}" image inspect --format '{{.Config.User}} {{json .Config.Entrypoint}} {{json .Config.Cmd}}' "$IMAGE") == '65532:65532 ["/verda-operator"] ["run"]' ]] ||
        die "image config is not USER 65532:65532 / ENTRYPOINT [/verda-operator] / CMD [run]"
fi
# The checks' bound counts from the end of the build.
DEADLINE=$((SECONDS + 280))

# --- 3. runtime probe ------------------------------------------------------------------------------------
# Lower the container's rlimits to values this (possibly unprivileged-for-rlimits) root can set: podman's
# defaults (nofile/nproc 1048576/4194304) need CAP_SYS_RESOURCE, which sandboxes often lack.
hard_nofile=$(ulimit -Hn)
[[ $hard_nofile == unlimited || $hard_nofile -gt 65536 ]] && hard_nofile=65536
ULIMITS=(--ulimit "nofile=$hard_nofile:$hard_nofile" --ulimit nproc=4096:4096)
HARDENING=(--read-only --cap-drop=all --security-opt no-new-privileges --network host --log-driver k8s-file)
if [[ -z $BUILD_ERR ]]; then
    probe_errors=()
    read -ra candidates <<<"${IMAGE_CHECK_RUNTIMES:-crun| runc| crun|--cgroups=disabled}"
    for cand in "${candidates[@]}"; do
        rt=${cand%%|*}
        extra=${cand#*|}
        command -v "$rt" >/dev/null || continue
        args=(--runtime "$rt" ${extra:+"$extra"} "${ULIMITS[@]}" "${HARDENING[@]}")
        if out=$(timeout 60 "${PODMAN[@]}" run --rm "${args[@]}" "$IMAGE" --version 2>&1) && [[ $out == verda-operator* ]]; then
            RUNTIME_ARGS=("${args[@]}")
            VERSION=$out
            log "container runs with --runtime $rt ${extra:-(cgroups on)}: $out"
            break
        fi
        probe_errors+=("--runtime $rt ${extra:-(cgroups on)}: $(tail -1 <<<"$out")")
        log "cannot run with --runtime $rt ${extra:-(cgroups on)}: $(tail -1 <<<"$out")"
    done
    ((${#RUNTIME_ARGS[@]})) || RUN_ERR=$(printf '%s; ' "${probe_errors[@]:-no OCI runtime (crun/runc) installed}")
fi

# --- 4. run the image ------------------------------------------------------------------------------------
container_running() {
    [[ $("${PODMAN[@]}" inspect --format '{{.State.Running}}' "$CNAME" 2>/dev/null) == true ]]
}
container_fail() {
    log "container logs:"
    timeout 10 "${PODMAN[@]}" logs "$CNAME" 2>&1 | tail -20 >&2 || true
    die "$*"
}
PROVED=()
NO_CLOUD='no OpenStack cloud configured, and this build has no embedded simulator'
run_image() {
    local port out body user code cargs cmd
    port=$(free_port)
    start_apiserver
    cargs=(-v "$KUBECONFIG_FILE:/kubeconfig:ro")
    cmd=(run --kubeconfig /kubeconfig --listen "127.0.0.1:$port")
    out=$(timeout 60 "${PODMAN[@]}" run --rm "${RUNTIME_ARGS[@]}" "${cargs[@]}" "$IMAGE" "${cmd[@]}" 2>&1) &&
        die "'run' with no cloud configured exited 0 in an image without the simulator: $out"
    grep -qF "$NO_CLOUD" <<<"$out" ||
        die "'run' with no cloud configured did not say the image has no simulator: $(tail -3 <<<"$out")"
    PROVED+=("with no cloud configured, 'run' ended at start saying: $NO_CLOUD")
    start_cloud
    cargs+=(-v "$RUN_DIR/clouds.yaml:/clouds.yaml:ro" "${CLOUD_ENV[@]}")
    log "starting container $CNAME: ${cmd[*]}"
    timeout 60 "${PODMAN[@]}" run -d --name "$CNAME" "${RUNTIME_ARGS[@]}" "${cargs[@]}" "$IMAGE" "${cmd[@]}" >/dev/null ||
        container_fail "podman run -d failed"
    body=$(wait_http "http://127.0.0.1:$port/healthz" 30 container_running) ||
        container_fail "no 200 from /healthz on 127.0.0.1:$port within 30s (or the container exited)"
    [[ $body == ok ]] || container_fail "/healthz answered '$body', expected 'ok'"
    wait_http "http://127.0.0.1:$port/readyz" 10 container_running >/dev/null || container_fail "/readyz did not answer 200"
    curl -fsS -m 5 -o /dev/null "http://127.0.0.1:$port/metrics" || container_fail "/metrics did not answer 200"
    PROVED+=("'run' against verda-test-apiserver served /healthz=ok, /readyz=ok, /metrics=200 on 127.0.0.1:$port")
    user=$(timeout 10 "${PODMAN[@]}" top "$CNAME" user 2>/dev/null | awk 'NR == 2 { print $1 }') || true
    if [[ -n $user ]]; then
        [[ $user == 65532 ]] || container_fail "PID 1 runs as user '$user', expected 65532"
        PROVED+=("PID 1 runs as uid 65532 (read-only rootfs, all capabilities dropped, no-new-privileges)")
    else
        log "warning: podman top could not show the container's user"
    fi
    timeout 30 "${PODMAN[@]}" stop -t 10 "$CNAME" >/dev/null || container_fail "podman stop failed"
    code=$("${PODMAN[@]}" inspect --format '{{.State.ExitCode}}' "$CNAME")
    [[ $code == 0 ]] || container_fail "exit code $code after SIGTERM, expected 0"
    PROVED+=("SIGTERM ended it with exit code 0")
    timeout 30 "${PODMAN[@]}" rm "$CNAME" >/dev/null || die "podman rm $CNAME failed"
}

# --- 5. fallback: the Dockerfile's cargo command on the host, chroot into the runtime base as uid 65532 ---
run_chroot() {
    local ch=$IMAGE_DIR/chroot port out
    log "fallback: ${CARGO_BUILD[*]} on the host, then chroot into the runtime base's rootfs as uid 65532"
    (cd "$REPO" && timeout "$BUILD_TIMEOUT" "${CARGO_BUILD[@]}") >"$RUN_DIR/cargo.log" 2>&1 ||
        die "the Dockerfile's cargo command fails on the host too: $(tail -8 "$RUN_DIR/cargo.log")"
    cp -a "$IMAGE_DIR/runtime-rootfs" "$ch"
    cp "$REPO/target/$PROFILE_DIR/verda-operator" "$ch/verda-operator"
    VERSION=$(timeout 20 chroot --userspec=65532:65532 "$ch" /verda-operator --version 2>&1) ||
        die "chroot --userspec=65532:65532 $ch /verda-operator --version failed: $VERSION"
    PROVED+=("chroot as uid 65532: '$VERSION'")
    port=$(free_port)
    start_apiserver
    cp "$KUBECONFIG_FILE" "$ch/kubeconfig"
    start_cloud
    cp "$RUN_DIR/clouds.yaml" "$ch/clouds.yaml"
    OS_CLIENT_CONFIG_FILE=/clouds.yaml OS_CLOUD=verda-sim timeout 120 chroot --userspec=65532:65532 "$ch" \
        /verda-operator run --kubeconfig /kubeconfig --listen "127.0.0.1:$port" >"$RUN_DIR/chroot.log" 2>&1 &
    CHROOT_PID=$!
    wait_http "http://127.0.0.1:$port/healthz" 30 kill -0 "$CHROOT_PID" >/dev/null ||
        die "chroot 'run' did not answer /healthz within 30s: $(tail -5 "$RUN_DIR/chroot.log")"
    kill "$CHROOT_PID"
    wait "$CHROOT_PID" 2>/dev/null || true
    CHROOT_PID=
    PROVED+=("chroot as uid 65532: 'run' answered GET /healthz = 200 on 127.0.0.1:$port")
}

if ((${#RUNTIME_ARGS[@]})); then
    run_image
else
    if [[ -n $BUILD_ERR ]]; then
        log "CANNOT BUILD the image here: $BUILD_ERR"
    else
        log "CANNOT RUN containers here: $RUN_ERR"
    fi
    run_chroot
fi

log "cleaning up"
# (the EXIT trap removes the images, storage, API server, simulator and scratch dirs)
echo "== image-check: $VERSION (Dockerfile, PROFILE=$PROFILE, $RUSTC_VERSION)"
if ((${#RUNTIME_ARGS[@]})); then
    echo "PASS: image built with podman from local bases in ${BUILD_SECS}s (cargo compiled $COMPILED crates)," \
        "$((SIZE / 1000000)) MB, run with: ${RUNTIME_ARGS[*]}"
else
    echo "PARTIAL: ${BUILD_ERR:+image build failed: $BUILD_ERR}${RUN_ERR:+containers cannot run here: $RUN_ERR}"
fi
for p in "${PROVED[@]}"; do echo "  - $p"; done
echo "  - total $((SECONDS - START))s"
if ((${#RUNTIME_ARGS[@]} == 0)) && [[ ${IMAGE_CHECK_ALLOW_FALLBACK:-} != 1 ]]; then
    exit 3
fi
