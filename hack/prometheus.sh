# Sourced by hack/check-monitoring.sh and hack/real-systems.sh.
# Installs Debian's prometheus package (prometheus and promtool) when either is
# missing, then stops the server the package may start: only what this install
# started, never a prometheus already running. Messages go to stderr; prints the
# prometheus binary's path.
install_prometheus() {
  if command -v promtool >/dev/null 2>&1 && command -v prometheus >/dev/null 2>&1; then
    command -v prometheus
    return 0
  fi
  if [[ $(id -u) -ne 0 ]]; then
    echo "promtool not found and not root: install Debian's prometheus package or put promtool on PATH" >&2
    exit 1
  fi
  echo "prometheus/promtool not found: installing Debian's prometheus package" >&2
  local before after pid unit_was_active=0 initd_existed=0 systemd=0
  before=$(pgrep -x prometheus || true)
  if command -v systemctl >/dev/null 2>&1 && [[ -d /run/systemd/system ]]; then
    systemd=1
    systemctl is-active --quiet prometheus.service 2>/dev/null && unit_was_active=1
  fi
  [[ -e /etc/init.d/prometheus ]] && initd_existed=1
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null
  if [[ $systemd == 1 ]]; then
    if [[ $unit_was_active == 0 ]]; then
      systemctl stop prometheus.service 2>/dev/null || true
      systemctl disable --quiet prometheus.service 2>/dev/null || true
    fi
  elif [[ $initd_existed == 0 && -x /etc/init.d/prometheus ]]; then
    /etc/init.d/prometheus stop >/dev/null 2>&1 || true
    if command -v update-rc.d >/dev/null 2>&1; then
      update-rc.d prometheus disable >/dev/null 2>&1 || true
    fi
  fi
  after=$(pgrep -x prometheus || true)
  for pid in $after; do
    if ! grep -qx "$pid" <<<"$before"; then
      echo "stopping prometheus (pid $pid) started by the package install" >&2
      kill "$pid" 2>/dev/null || true
    fi
  done
  if ! command -v promtool >/dev/null 2>&1 || ! command -v prometheus >/dev/null 2>&1; then
    echo "prometheus or promtool still missing after installing the prometheus package" >&2
    exit 1
  fi
  command -v prometheus
}

