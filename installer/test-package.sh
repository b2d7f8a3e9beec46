#!/usr/bin/env bash
# The package as a user meets it: builds the .deb (installer/package.sh), makes a
# clean Debian 12 root with debootstrap, installs the .deb there with apt (its
# dependencies come from the Debian mirror), then as an ordinary user generates
# an image with kvstudio-cli and the bundled demo model, opens the window under
# Xvfb for one run with a screenshot, checks both images have content, and
# finally purges the package and checks that every file it installed is gone.
#
# usage: installer/test-package.sh [--deb FILE] [--cuda-deb FILE] [--build-dir DIR] [--work DIR] [--keep]
#   --deb FILE       test this kvstudio .deb instead of building one
#   --build-dir DIR  build it there (installer/package.sh --build-dir; default build/package)
#   --cuda-deb FILE  also install this kvstudio-cuda .deb (no GPU here: checks
#                    that the CUDA part loads and that the CPU is still used)
#   --work DIR       where the roots go (default /var/tmp/kvstudio-package-test);
#                    the clean root is kept there as base-bookworm.tar and reused
#   --keep           leave the test root in place afterwards
# Needs root (debootstrap, chroot, mounts) and about 3 GB free (5 GB with CUDA).
# A release check, not a CI test: it takes several minutes (docs/installing.md).
set -euo pipefail
root_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mirror=${KVSTUDIO_DEBIAN_MIRROR:-http://deb.debian.org/debian}
work=/var/tmp/kvstudio-package-test
deb="" cuda_deb="" keep=0 build=build/package
while [[ $# -gt 0 ]]; do
  case "$1" in
    --deb) deb=$(realpath "${2:?}"); shift ;;
    --cuda-deb) cuda_deb=$(realpath "${2:?}"); shift ;;
    --work) work=${2:?}; shift ;;
    --build-dir) build=${2:?}; shift ;;
    --keep) keep=1 ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "test-package.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[[ $(id -u) -eq 0 ]] || { echo "test-package.sh: run as root (debootstrap and chroot)" >&2; exit 1; }

now_ms() { echo $(($(date +%s%N) / 1000000)); }
seconds_since() { local ms=$(($(now_ms) - $1)); printf '%d.%d' $((ms / 1000)) $((ms % 1000 / 100)); }
step() { printf '\n== %s (%s)\n' "$*" "$(date -u +%H:%M:%S)"; }
failures=0
check() {  # name, command...
  local name=$1
  shift
  if "$@"; then echo "PASS $name"; else echo "FAIL $name"; failures=$((failures + 1)); fi
}

if [[ -z "$deb" ]]; then
  step "building the package (installer/package.sh --no-cuda --only deb)"
  "$root_dir/installer/package.sh" --no-cuda --only deb --build-dir "$build"
  deb=$(ls "$root_dir/$build"/packages/kvstudio_*_amd64.deb)
fi
echo "package: $deb ($(du -m "$deb" | cut -f1) MiB)"

if ! command -v debootstrap >/dev/null; then
  step "installing debootstrap"
  apt-get install -y debootstrap >/dev/null
fi

mkdir -p "$work"
base="$work/base-bookworm.tar"
if [[ ! -f "$base" ]]; then
  step "making a clean Debian 12 root with debootstrap (once; kept as $base)"
  rm -rf "$work/base"
  nice -n 19 debootstrap --variant=minbase bookworm "$work/base" "$mirror" >"$work/debootstrap.log" 2>&1 ||
    { tail -20 "$work/debootstrap.log"; exit 1; }
  cat >"$work/base/etc/apt/sources.list" <<SOURCES
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb http://deb.debian.org/debian-security bookworm-security main
SOURCES
  tar -C "$work/base" -cf "$base" .
  rm -rf "$work/base"
fi

chroot_dir="$work/root"
mounted=()
cleanup() {
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[$i]}" 2>/dev/null || true; done
  if [[ $keep -eq 0 ]]; then rm -rf "$chroot_dir"; else echo "test root left in $chroot_dir"; fi
}
trap cleanup EXIT
step "a fresh root from the clean one"
rm -rf "$chroot_dir" && mkdir -p "$chroot_dir"
tar -C "$chroot_dir" -xf "$base"
for fs in proc sys dev dev/pts; do
  mount --bind "/$fs" "$chroot_dir/$fs"
  mounted+=("$chroot_dir/$fs")
done
cp /etc/resolv.conf "$chroot_dir/etc/resolv.conf"
in_root() { chroot "$chroot_dir" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8 "$@"; }
# An ordinary user, as people run the programs (nothing may need to write under /usr).
in_root useradd -m -s /bin/bash kvuser
as_user() { chroot --userspec=kvuser:kvuser "$chroot_dir" env -i HOME=/home/kvuser USER=kvuser \
  PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 "$@"; }

step "apt-get install ./$(basename "$deb")"
cp "$deb" "$chroot_dir/tmp/"
in_root apt-get update -qq
before=$(in_root dpkg-query -W -f '${Package}\n' | sort)
start=$(now_ms)
in_root apt-get install -y -q "/tmp/$(basename "$deb")" >"$work/apt-install.log" 2>&1 ||
  { tail -30 "$work/apt-install.log"; exit 1; }
install_s=$(seconds_since "$start")
added=$(comm -13 <(echo "$before") <(in_root dpkg-query -W -f '${Package}\n' | sort) | wc -l)
echo "installed in $install_s s with $added packages from the mirror (download included)"
in_root dpkg-query -W -f '${Package} ${Version} ${Installed-Size} KiB\n' kvstudio
if [[ -n "$cuda_deb" ]]; then
  step "apt-get install ./$(basename "$cuda_deb")"
  cp "$cuda_deb" "$chroot_dir/tmp/"
  in_root apt-get install -y -q "/tmp/$(basename "$cuda_deb")" >>"$work/apt-install.log" 2>&1 ||
    { tail -30 "$work/apt-install.log"; exit 1; }
  rm -f "$chroot_dir/tmp/$(basename "$cuda_deb")"
fi
rm -f "$chroot_dir/tmp/$(basename "$deb")"
files=$(in_root dpkg -L kvstudio $([[ -n "$cuda_deb" ]] && echo kvstudio-cuda) | sort -u)

step "what is installed"
for program in kvstudio kvstudio-cli kvstudio-train; do
  check "$program on PATH" in_root test -x "/usr/bin/$program"
  check "$program: every library found" bash -c "! chroot '$chroot_dir' ldd /usr/bin/$program | grep -q 'not found'"
  check "$program: LibTorch's CUDA part not linked" \
    bash -c "! readelf -d '$chroot_dir/usr/bin/$program' | grep -Eq 'NEEDED.*lib(torch_cuda|c10_cuda|torch)\.so'"
  check "$program: man page" test -f "$chroot_dir/usr/share/man/man1/$program.1"
done
readelf -d "$chroot_dir/usr/bin/kvstudio-cli" | grep -E 'RPATH|RUNPATH'
check "menu entry" test -f "$chroot_dir/usr/share/applications/org.kvstudio.KVStudio.desktop"
check "demo models" test -f "$chroot_dir/usr/share/kvstudio/resources/models/llamagen-demo/model.json"
check "the demo models' shared evaluation classifier" \
  test -f "$chroot_dir/usr/share/kvstudio/resources/models/shared/evaluation-classifier.safetensors"
check "docs" test -f "$chroot_dir/usr/share/kvstudio/docs/design.md"
echo "Depends: $(dpkg-deb -f "$deb" Depends)"

step "kvstudio-cli as a user: info, then the first image"
as_user kvstudio-cli --version
info=$(as_user kvstudio-cli info)
echo "$info" | sed -n '1p;/^device auto/p'
if [[ -n "$cuda_deb" ]]; then
  check "info: CUDA part loaded, CPU used" grep -Eq "^device auto: +cpu; LibTorch's CUDA part loaded from /usr/lib/kvstudio/torch/lib/libtorch_cuda.so; no GPU found" <<<"$info"
else
  check "info: CPU, CUDA part not installed" grep -Eq "^device auto: +cpu; LibTorch's CUDA part not installed" <<<"$info"
fi
start=$(now_ms)
check "kvstudio-cli generate (bundled demo model)" \
  as_user kvstudio-cli generate --class 7 --seed 1 --out /home/kvuser/first.png --quiet
echo "first image in $(seconds_since "$start") s (kvstudio-cli generate, started cold after the install)"
check "generated image has content" python3 "$root_dir/installer/packaging/png_content.py" "$chroot_dir/home/kvuser/first.png"
check "the PNG remembers its model" bash -c "chroot --userspec=kvuser:kvuser '$chroot_dir' env HOME=/home/kvuser kvstudio-cli inspect /home/kvuser/first.png | grep -q llamagen-demo"

step "the window under Xvfb, as a user: --run-once --screenshot"
in_root apt-get install -y -q xvfb xauth >>"$work/apt-install.log" 2>&1 || { tail -30 "$work/apt-install.log"; exit 1; }
start=$(now_ms)
check "kvstudio --run-once" as_user env QT_QPA_PLATFORM=xcb xvfb-run -a -s "-screen 0 1600x1000x24" \
  kvstudio --run-once --screenshot /home/kvuser/window.png --timeout 600
echo "window run in $(seconds_since "$start") s"
summary="$chroot_dir/home/kvuser/window.json"
[[ -f "$summary" ]] && python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print('summary: ok', j['ok'], '|', j['message'], '| canvas', j['canvas'])" "$summary"
check "run-once summary: ok, canvas not blank" python3 -c \
  "import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if j['ok'] and j['canvas']['nonblank'] else 1)" "$summary"
check "screenshot has content" python3 "$root_dir/installer/packaging/png_content.py" "$chroot_dir/home/kvuser/window.png"
mkdir -p "$work/last-run" && cp "$chroot_dir/home/kvuser/window.png" "$chroot_dir/home/kvuser/first.png" "$work/last-run/"

step "apt-get purge, then every installed file must be gone"
in_root apt-get purge -y -q kvstudio $([[ -n "$cuda_deb" ]] && echo kvstudio-cuda) >>"$work/apt-install.log" 2>&1
left=0
while IFS= read -r path; do
  [[ -z "$path" || "$path" == "/." ]] && continue
  full="$chroot_dir$path"
  if [[ -e "$full" || -L "$full" ]] && [[ ! -d "$full" || "$path" == *kvstudio* ]]; then
    echo "left behind: $path"
    left=$((left + 1))
  fi
done <<<"$files"
echo "$(wc -l <<<"$files") paths were installed, $left left behind"
check "every installed file removed" test "$left" -eq 0
stray=$(cd "$chroot_dir" && find . -xdev \( -path ./proc -o -path ./sys -o -path ./dev -o -path ./home -o -path ./tmp -o -path ./var/cache/apt -o -path ./var/lib/dpkg -o -path ./var/log \) -prune -o -iname '*kvstudio*' -print)
[[ -z "$stray" ]] || echo "stray: $stray"
check "no kvstudio path left outside home" test -z "$stray"

echo
if [[ $failures -eq 0 ]]; then echo "test-package: all checks passed"; else echo "test-package: $failures checks FAILED"; fi
exit $((failures > 0))
