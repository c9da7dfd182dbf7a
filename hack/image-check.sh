#!/usr/bin/env bash
# Builds a FROM-scratch container image of verda-operator from files on this machine (no registry) and
# proves it runs:
#   1. assembles target/image/rootfs: the binary, the shared libraries ldd lists (at ldd's paths) and the
#      system CA bundle;
#   2. builds hack/image/Containerfile with podman (private vfs storage under target/image-storage);
#   3. finds an OCI runtime setup that can start containers here (crun/runc, with/without cgroups);
#   4. starts verda-test-apiserver on the host (127.0.0.1, free port), runs the image as
#      `run --kubeconfig ... --listen 127.0.0.1:PORT` with --network host, checks /healthz, /readyz and
#      /metrics answer and that PID 1 runs as uid 65532, then stops it (SIGTERM, expects exit 0).
#      Without a verda-test-apiserver binary it runs `simulate` instead (the operator's `run` exits before
#      serving /healthz when no Kubernetes API answers) and checks the simulator answers /identity/v3.
#      A binary built without the embedded simulator (`--no-default-features --features mimalloc`, as
#      the image is) is first run with no cloud configured, which must end it with the error that says
#      so; then it runs against a simulator started on the host from VERDA_CLOUD_SIMULATOR, its
#      clouds.yaml given to the container.
#   5. If no container can be built or started, falls back to chroot(1) into the rootfs as uid 65532 and
#      says which part it could not do and why.
# Everything it creates (container, image, storage, host processes) is removed on exit.
#
# Usage: hack/image-check.sh [BINARY]   (default target/release/verda-operator, else target/debug/...)
# Env:   VERDA_TEST_APISERVER=path  test API server binary (default: next to BINARY, then target/*/);
#                                   `none` checks `simulate` instead of `run`
#        VERDA_CLOUD_SIMULATOR=path  an operator binary with the simulator, for a BINARY without one
#                                   (default target/debug/verda-operator)
#        IMAGE_CHECK_RUNTIMES="crun| runc| crun|--cgroups=disabled"  runtime setups to try, in order
#        IMAGE_CHECK_NO_INSTALL=1   never apt-get install missing packages; fail instead
#        IMAGE_CHECK_ALLOW_FALLBACK=1  exit 0 (not 3) when only the chroot fallback could be checked
# Exit: 0 image built and run; 1 a check failed; 3 containers cannot build/run here, chroot fallback passed.
# Needs root and Debian/Ubuntu (apt-get) for the package step. Bounded: < 5 min once packages are installed.
set -euo pipefail

START=$SECONDS
DEADLINE=$((START + 280))
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
IMAGE_DIR=$REPO/target/image
ROOTFS=$IMAGE_DIR/rootfs
STORE=$REPO/target/image-storage
CONTAINERFILE=$REPO/hack/image/Containerfile
IMAGE=localhost/verda-operator:image-check-$$
CNAME=verda-image-check-$$

log() { printf '[image-check %3ds] %s\n' $((SECONDS - START)) "$*" >&2; }
die() {
    log "FAIL: $*"
    exit 1
}
time_left() { echo $((DEADLINE - SECONDS)); }

[[ $(id -u) == 0 ]] || die "must run as root (rootful podman, chroot); rootless podman is not set up here"

# --- binary ----------------------------------------------------------------------------------------------
if [[ $# -ge 1 ]]; then
    BIN=$1
    [[ -e $BIN || $BIN == /* ]] || BIN=$REPO/$1
elif [[ -x $REPO/target/release/verda-operator ]]; then
    BIN=$REPO/target/release/verda-operator
else
    BIN=$REPO/target/debug/verda-operator
fi
[[ -f $BIN && -x $BIN ]] || die "no operator binary at $BIN (build it first: cargo build --release)"
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")

# --- packages --------------------------------------------------------------------------------------------
missing=()
command -v podman >/dev/null || missing+=(podman)
command -v runc >/dev/null || missing+=(runc)
command -v crun >/dev/null || missing+=(crun)
command -v curl >/dev/null || missing+=(curl)
command -v ldd >/dev/null || missing+=(libc-bin)
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
    log "installed in $((SECONDS - t0))s; the time limit counts from now"
    START=$SECONDS
    DEADLINE=$((START + 280))
fi
[[ -s /etc/ssl/certs/ca-certificates.crt ]] || die "/etc/ssl/certs/ca-certificates.crt missing (update-ca-certificates?)"

# --- scratch space and cleanup ---------------------------------------------------------------------------
RUN_DIR=$(mktemp -d /tmp/verda-image-check.XXXXXX)
chmod 755 "$RUN_DIR"
PODMAN=(podman --root "$STORE" --runroot "$RUN_DIR/runroot" --tmpdir "$RUN_DIR/tmp"
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
        timeout 30 "${PODMAN[@]}" rmi -f "$IMAGE" >/dev/null 2>&1
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
    rm -rf "$RUN_DIR" "$IMAGE_DIR/chroot"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
    local p i
    for i in $(seq 1 50); do
        p=$((20000 + RANDOM % 20000))
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
            echo "$p"
            return 0
        fi
    done
    die "no free port found on 127.0.0.1"
}

# --- 1. rootfs -------------------------------------------------------------------------------------------
log "assembling $ROOTFS from $BIN ($(du -h "$BIN" | cut -f1))"
rm -rf "$ROOTFS" "$IMAGE_DIR/chroot"
mkdir -p "$ROOTFS/etc/ssl/certs"
cp "$BIN" "$ROOTFS/verda-operator" # a copy: a concurrent cargo build may replace $BIN
chmod 0755 "$ROOTFS/verda-operator"
VERSION=$(timeout 20 "$ROOTFS/verda-operator" --version 2>&1) || die "$BIN --version failed on the host: $VERSION"
[[ $VERSION == verda-operator* ]] || die "$BIN is not verda-operator (--version said: $VERSION)"
ldd_out=$(ldd "$ROOTFS/verda-operator" 2>&1) || true
if grep -q 'not a dynamic executable\|statically linked' <<<"$ldd_out"; then
    libs=()
else
    grep -q 'not found' <<<"$ldd_out" && die "ldd: missing libraries: $ldd_out"
    mapfile -t libs < <(awk '$2 == "=>" && $3 ~ /^\// { print $3; next } $1 ~ /^\// { print $1 }' <<<"$ldd_out")
    ((${#libs[@]})) || die "ldd listed no libraries: $ldd_out"
fi
for lib in "${libs[@]}"; do
    mkdir -p "$ROOTFS$(dirname "$lib")"
    cp -L "$lib" "$ROOTFS$lib"
done
cp -L /etc/ssl/certs/ca-certificates.crt "$ROOTFS/etc/ssl/certs/ca-certificates.crt"
log "rootfs: /verda-operator ${libs[*]:-(static)} /etc/ssl/certs/ca-certificates.crt ($(du -sh "$ROOTFS" | cut -f1))"

# --- test API server (host) ------------------------------------------------------------------------------
API_BIN=${VERDA_TEST_APISERVER:-}
if [[ $API_BIN == none ]]; then
    API_BIN=
elif [[ -z $API_BIN ]]; then
    for c in "$(dirname "$BIN")/verda-test-apiserver" "$REPO/target/release/verda-test-apiserver" \
        "$REPO/target/debug/verda-test-apiserver"; do
        if [[ -x $c ]]; then API_BIN=$c; break; fi
    done
fi
KUBECONFIG_FILE=$RUN_DIR/kubeconfig
start_apiserver() {
    [[ -n $API_BIN ]] || return 1
    [[ -x $API_BIN ]] || die "VERDA_TEST_APISERVER=$API_BIN is not executable"
    cp "$API_BIN" "$RUN_DIR/verda-test-apiserver"
    local crd=()
    [[ -d $REPO/config/crd/bases ]] && crd=(--crd-dir "$REPO/config/crd/bases")
    (cd "$REPO" && exec timeout 240 "$RUN_DIR/verda-test-apiserver" --kubeconfig "$KUBECONFIG_FILE" "${crd[@]}") \
        >"$RUN_DIR/apiserver.log" 2>&1 &
    API_PID=$!
    local i
    for i in $(seq 1 100); do
        [[ -s $KUBECONFIG_FILE ]] && grep -q 'serving on' "$RUN_DIR/apiserver.log" && break
        kill -0 "$API_PID" 2>/dev/null || die "verda-test-apiserver exited: $(cat "$RUN_DIR/apiserver.log")"
        sleep 0.1
    done
    [[ -s $KUBECONFIG_FILE ]] || die "verda-test-apiserver wrote no kubeconfig within 10s"
    chmod 644 "$KUBECONFIG_FILE"
    log "test API server: $(grep -o 'http://[0-9.:]*' "$RUN_DIR/apiserver.log" | head -1) ($API_BIN)"
}

# A binary without the embedded simulator needs a cloud: the simulator of VERDA_CLOUD_SIMULATOR on the
# host, its clouds.yaml in $RUN_DIR/clouds.yaml (given to the container as /clouds.yaml).
HAS_SIM=
timeout 20 "$ROOTFS/verda-operator" simulate --help >/dev/null 2>&1 && HAS_SIM=1
CLOUD_ENV=(-e OS_CLIENT_CONFIG_FILE=/clouds.yaml -e OS_CLOUD=verda-sim)
start_cloud() {
    local sim=${VERDA_CLOUD_SIMULATOR:-$REPO/target/debug/verda-operator} port i
    [[ -x $sim ]] && timeout 20 "$sim" simulate --help >/dev/null 2>&1 ||
        die "$BIN has no embedded simulator, and VERDA_CLOUD_SIMULATOR=$sim is no operator binary with one"
    port=$(free_port)
    timeout 240 "$sim" simulate --listen "127.0.0.1:$port" >"$RUN_DIR/clouds.yaml" 2>"$RUN_DIR/sim.log" &
    SIM_PID=$!
    for i in $(seq 1 100); do
        grep -q 'verda-sim:' "$RUN_DIR/clouds.yaml" 2>/dev/null && break
        kill -0 "$SIM_PID" 2>/dev/null || die "the host simulator exited: $(cat "$RUN_DIR/sim.log")"
        sleep 0.1
    done
    grep -q 'verda-sim:' "$RUN_DIR/clouds.yaml" || die "the host simulator printed no clouds.yaml within 10s"
    chmod 644 "$RUN_DIR/clouds.yaml"
    log "no embedded simulator in $BIN: its cloud is the simulator on 127.0.0.1:$port ($sim)"
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

# --- 2. build --------------------------------------------------------------------------------------------
BUILD_ERR=
RUN_ERR=
RUNTIME_ARGS=()
mkdir -p "$STORE"
log "building $IMAGE (podman build, vfs storage in $STORE)"
if ! build_out=$(timeout 120 "${PODMAN[@]}" build --pull=never -f "$CONTAINERFILE" -t "$IMAGE" "$IMAGE_DIR" 2>&1); then
    BUILD_ERR=$(tail -5 <<<"$build_out")
    log "podman build failed: $BUILD_ERR"
else
    SIZE=$("${PODMAN[@]}" image inspect --format '{{.Size}}' "$IMAGE")
    log "built $IMAGE: $((SIZE / 1000000)) MB ($(tail -1 <<<"$build_out" | cut -c1-12))"
    [[ $("${PODMAN[@]}" image inspect --format '{{.Config.User}} {{json .Config.Entrypoint}} {{json .Config.Cmd}}' "$IMAGE") == '65532:65532 ["/verda-operator"] ["run"]' ]] ||
        die "image config is not USER 65532:65532 / ENTRYPOINT [/verda-operator] / CMD [run]"
fi

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
if ((${#RUNTIME_ARGS[@]})); then
    PORT=$(free_port)
    if start_apiserver; then
        MODE=run
        cargs=(-v "$KUBECONFIG_FILE:/kubeconfig:ro")
        cmd=(run --kubeconfig /kubeconfig --listen "127.0.0.1:$PORT")
        if [[ -z $HAS_SIM ]]; then
            out=$(timeout 60 "${PODMAN[@]}" run --rm "${RUNTIME_ARGS[@]}" "${cargs[@]}" "$IMAGE" "${cmd[@]}" 2>&1) &&
                die "'run' with no cloud configured exited 0 in an image without the simulator: $out"
            grep -q 'this build has no embedded simulator' <<<"$out" ||
                die "'run' with no cloud configured did not say the image has no simulator: $(tail -3 <<<"$out")"
            PROVED+=("with no cloud configured, 'run' ended at start saying: $(grep -o 'no OpenStack cloud configured, and this build has no embedded simulator' <<<"$out" | head -1)")
            start_cloud
            cargs+=(-v "$RUN_DIR/clouds.yaml:/clouds.yaml:ro" "${CLOUD_ENV[@]}")
        fi
    else
        [[ -n $HAS_SIM ]] || die "$BIN has no 'simulate' command: give it a verda-test-apiserver to run against"
        MODE=simulate
        log "no verda-test-apiserver binary (set VERDA_TEST_APISERVER or build it: cargo build -p verda-test-apiserver):" \
            "'run' needs a Kubernetes API before it serves /healthz, so checking 'simulate' instead"
        cargs=()
        cmd=(simulate --listen "127.0.0.1:$PORT")
    fi
    log "starting container $CNAME: ${cmd[*]}"
    timeout 60 "${PODMAN[@]}" run -d --name "$CNAME" "${RUNTIME_ARGS[@]}" "${cargs[@]}" "$IMAGE" "${cmd[@]}" >/dev/null ||
        container_fail "podman run -d failed"
    if [[ $MODE == run ]]; then
        body=$(wait_http "http://127.0.0.1:$PORT/healthz" 30 container_running) ||
            container_fail "no 200 from /healthz on 127.0.0.1:$PORT within 30s (or the container exited)"
        [[ $body == ok ]] || container_fail "/healthz answered '$body', expected 'ok'"
        body=$(wait_http "http://127.0.0.1:$PORT/readyz" 10 container_running) || container_fail "/readyz did not answer 200"
        curl -fsS -m 5 -o /dev/null "http://127.0.0.1:$PORT/metrics" || container_fail "/metrics did not answer 200"
        PROVED+=("'run' against verda-test-apiserver served /healthz=ok, /readyz=ok, /metrics=200 on 127.0.0.1:$PORT")
    else
        wait_http "http://127.0.0.1:$PORT/identity/v3" 30 container_running >/dev/null ||
            container_fail "simulator did not answer 200 on /identity/v3 within 30s"
        PROVED+=("'simulate' answered GET /identity/v3 = 200 on 127.0.0.1:$PORT")
    fi
    user=$(timeout 10 "${PODMAN[@]}" top "$CNAME" user 2>/dev/null | awk 'NR == 2 { print $1 }') || true
    if [[ -n $user ]]; then
        [[ $user == 65532 ]] || container_fail "PID 1 runs as user '$user', expected 65532"
        PROVED+=("PID 1 runs as uid 65532 (read-only rootfs, all capabilities dropped, no-new-privileges)")
    else
        log "warning: podman top could not show the container's user"
    fi
    if [[ $MODE == run ]]; then
        signal=SIGTERM
        timeout 30 "${PODMAN[@]}" stop -t 10 "$CNAME" >/dev/null || container_fail "podman stop failed"
    else
        # `simulate` only handles Ctrl-C; as PID 1 it ignores SIGTERM, so podman stop would SIGKILL it
        signal=SIGINT
        timeout 20 "${PODMAN[@]}" kill --signal INT "$CNAME" >/dev/null || container_fail "podman kill --signal INT failed"
        timeout 20 "${PODMAN[@]}" wait "$CNAME" >/dev/null || container_fail "no exit within 20s after SIGINT"
    fi
    code=$("${PODMAN[@]}" inspect --format '{{.State.ExitCode}}' "$CNAME")
    [[ $code == 0 ]] || container_fail "exit code $code after $signal, expected 0"
    PROVED+=("$signal ended it with exit code 0")
    timeout 30 "${PODMAN[@]}" rm "$CNAME" >/dev/null || die "podman rm $CNAME failed"
else
    # --- 5. fallback: chroot into the rootfs as uid 65532 ----------------------------------------------------
    if [[ -n $BUILD_ERR ]]; then
        log "CANNOT BUILD the image here: $BUILD_ERR"
    else
        log "CANNOT RUN containers here: $RUN_ERR"
    fi
    log "fallback: chroot into $ROOTFS as uid 65532 (proves the binary runs with only the rootfs's libraries)"
    out=$(timeout 20 chroot --userspec=65532:65532 "$ROOTFS" /verda-operator --version 2>&1) ||
        die "chroot --userspec=65532:65532 $ROOTFS /verda-operator --version failed: $out"
    PROVED+=("chroot as uid 65532: '$out'")
    CH=$IMAGE_DIR/chroot
    cp -a "$ROOTFS" "$CH"
    PORT=$(free_port)
    if start_apiserver; then
        cp "$KUBECONFIG_FILE" "$CH/kubeconfig"
        chroot_cmd=(run --kubeconfig /kubeconfig --listen "127.0.0.1:$PORT")
        path=/healthz
        if [[ -z $HAS_SIM ]]; then
            start_cloud
            cp "$RUN_DIR/clouds.yaml" "$CH/clouds.yaml"
            export OS_CLIENT_CONFIG_FILE=/clouds.yaml OS_CLOUD=verda-sim
        fi
    else
        [[ -n $HAS_SIM ]] || die "$BIN has no 'simulate' command: give it a verda-test-apiserver to run against"
        log "no verda-test-apiserver binary: checking 'simulate' instead of 'run'"
        chroot_cmd=(simulate --listen "127.0.0.1:$PORT")
        path=/identity/v3
    fi
    timeout 120 chroot --userspec=65532:65532 "$CH" /verda-operator "${chroot_cmd[@]}" >"$RUN_DIR/chroot.log" 2>&1 &
    CHROOT_PID=$!
    wait_http "http://127.0.0.1:$PORT$path" 30 kill -0 "$CHROOT_PID" >/dev/null ||
        die "chroot '${chroot_cmd[0]}' did not answer $path within 30s: $(tail -5 "$RUN_DIR/chroot.log")"
    kill "$CHROOT_PID"
    wait "$CHROOT_PID" 2>/dev/null || true
    CHROOT_PID=
    PROVED+=("chroot as uid 65532: '${chroot_cmd[0]}' answered GET $path = 200 on 127.0.0.1:$PORT")
fi

log "cleaning up"
# (the EXIT trap removes the image, storage, API server and scratch dir)
echo "== image-check: $VERSION ($BIN)"
if ((${#RUNTIME_ARGS[@]})); then
    echo "PASS: FROM-scratch image built with podman ($((SIZE / 1000000)) MB) and run with: ${RUNTIME_ARGS[*]}"
else
    echo "PARTIAL: ${BUILD_ERR:+image build failed: $BUILD_ERR}${RUN_ERR:+containers cannot run here: $RUN_ERR}"
fi
for p in "${PROVED[@]}"; do echo "  - $p"; done
echo "  - total $((SECONDS - START))s"
if ((${#RUNTIME_ARGS[@]} == 0)) && [[ ${IMAGE_CHECK_ALLOW_FALLBACK:-} != 1 ]]; then
    exit 3
fi
