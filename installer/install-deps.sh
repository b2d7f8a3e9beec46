#!/usr/bin/env bash
# Installs everything KV Studio needs on Debian 12, idempotently:
#   - Debian packages (compiler tool-chain pieces, Qt 6, OpenCV, spdlog, Dear ImGui,
#     nlohmann-json, PCRE2, SQLite, GoogleTest, xvfb) — skipped when all are already installed;
#   - LibTorch 2.x from the PyPI `torch` wheel, in a project-local virtual
#     environment (.venv/) — skipped when it imports already;
#   - the PyPI `tokenizers` package in the same environment, the reference the
#     tokenizer tests compare with — skipped when it imports already.
# The PyPI wheel is CUDA-enabled: the same build uses an NVIDIA GPU when present.
# Environment:
#   KVSTUDIO_VENV      where the virtual environment lives (default: <repo>/.venv)
#   KVSTUDIO_TORCH     pip requirement for torch (default: torch>=2.11,<3; 2.11 is the
#                      oldest release the GPU attention path was measured with)
#   KVSTUDIO_TOKENIZERS  pip requirement for tokenizers (default: tokenizers>=0.19,<1)
#   KVSTUDIO_NO_GUI=1  skip the Qt / ImGui / xvfb packages (engine + CLI only)
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${KVSTUDIO_VENV:-$repo/.venv}"
torch_min="2.11"
torch_req="${KVSTUDIO_TORCH:-torch>=${torch_min},<3}"

log() { printf '[install] %s\n' "$*" >&2; }

apt_packages=(
  build-essential cmake ninja-build pkg-config ccache python3-venv
  libopencv-dev libspdlog-dev libfmt-dev nlohmann-json3-dev libpcre2-dev
  libgtest-dev libgmock-dev libpng-dev libsentencepiece-dev libsqlite3-dev clang libclang-rt-14-dev clang-format
)
gui_packages=(
  qt6-base-dev libqt6opengl6-dev libgl-dev libimgui-dev xvfb xauth
)
if [[ "${KVSTUDIO_NO_GUI:-0}" != "1" ]]; then
  apt_packages+=("${gui_packages[@]}")
fi

missing=()
for p in "${apt_packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if (( ${#missing[@]} )); then
  log "installing Debian packages: ${missing[*]}"
  sudo_cmd=()
  if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  log "Debian packages: all present"
fi

# Python for the venv: prefer Debian's python3 (python3-venv installed above).
py="${KVSTUDIO_PYTHON:-}"
if [[ -z "$py" ]]; then
  if [[ -x /usr/bin/python3 ]]; then py=/usr/bin/python3; else py="$(command -v python3)"; fi
fi

if [[ ! -x "$venv/bin/python" ]]; then
  log "creating virtual environment $venv"
  "$py" -m venv "$venv"
fi

# One import answers both questions: is torch 2.x there, and which C++ ABI it uses.
torch_probe() {
  "$venv/bin/python" -W ignore -c 'import torch; print(torch.__version__, int(torch._C._GLIBCXX_USE_CXX11_ABI))' 2>/dev/null
}
probe="$(torch_probe || true)"
# At least torch_min (the packed GPU attention uses private ATen entry points
# whose signatures were checked on that release): an older torch is upgraded.
recent_enough() {
  [[ "$1" =~ ^2\. ]] && [[ "$(printf '%s\n%s\n' "$torch_min" "${1%%[+ ]*}" | sort -V | head -1)" == "$torch_min" ]]
}
if recent_enough "$probe"; then
  log "LibTorch: ${probe%% *} present"
else
  log "installing $torch_req into $venv (first time: about 5 GB, a few minutes)"
  start=$(date +%s)
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "$torch_req"
  log "torch installed in $(( $(date +%s) - start )) s"
  probe="$(torch_probe)"
fi
if [[ "${probe##* }" != "1" ]]; then
  log "warning: this torch wheel uses the pre-C++11 ABI; it will not link with Debian's Qt/OpenCV"
fi
# Hugging Face's tokenizer library: the tokenizer tests' fixture step trains
# small tokenizers with it and records its ids (tests/data/make_tokenizer_fixture.py).
if "$venv/bin/python" -c 'import tokenizers' 2>/dev/null; then
  log "tokenizers: present"
else
  log "installing tokenizers into $venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "${KVSTUDIO_TOKENIZERS:-tokenizers>=0.19,<1}"
fi
log "done"
