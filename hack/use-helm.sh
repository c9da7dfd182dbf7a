# Sourced by the scripts that run Helm: puts a helm on PATH, the one already there, one
# an earlier run installed in ~/.local/bin, or a fresh one from ../shared/tools/get-helm.sh.
if ! command -v helm >/dev/null; then
  if [[ -x $HOME/.local/bin/helm ]]; then
    PATH=$HOME/.local/bin:$PATH
  else
    PATH="$(dirname "$(bash "$(dirname "${BASH_SOURCE[0]}")/../../shared/tools/get-helm.sh")"):$PATH"
  fi
fi
