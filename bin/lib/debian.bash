# Sourced by the scripts that build into THRIFT_NATIVE_CACHE (bin/rubies, bin/musl-rubies, bin/cross-libs) and by
# bin/matrix and bin/thrift-lib: this machine's packages installed one script at a time, the cache's locks, Debian
# packages and sources fetched through private apt states (nothing is added to this machine's apt sources or
# architectures), and the Ruby release sources the gems are built against. The caller sets NAME (its name, for
# `log`), and where it uses them CACHE (its folder in THRIFT_NATIVE_CACHE) and ROOT (the work tree).

KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
MIRROR=http://deb.debian.org/debian
# .ci/run builds ahead beside the suites (bin/prebuild): two of these scripts may run at once. apt refuses a second
# apt-get rather than wait for the first, so this project's apt calls take turns on this lock.
APT_LOCK=/run/lock/thrift_native-apt.lock
[ -w /run/lock ] || APT_LOCK=/tmp/thrift_native-apt.lock

log() { echo "$NAME: $*" >&2; }

need_packages() {
  local p missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return
  log "installing ${missing[*]}"
  flock "$APT_LOCK" sh -c 'apt-get update -q >/dev/null &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" >/dev/null' sh "${missing[@]}"
}

# The cache's locks (in THRIFT_NATIVE_CACHE/locks/): .ci/run builds ahead (bin/prebuild) beside the cells that need
# what it builds, so two runs of one script may meet. Each script checks first, with no lock, whether what it was asked
# for is built (a stamp written last says so); only to build does it take a lock, then checks again, since another
# run may have built it meanwhile. The locks are per thing built, so that a cell whose Ruby is built, or being built
# first, does not wait behind the builds of others: bin/rubies takes `rubies-MINOR`; bin/musl-rubies
# `musl-rubies-ARCH-MINOR`, `musl-deps-ARCH` and `musl-sources`; bin/cross-libs `cross-PLATFORM` (its target folders)
# and, around what its platforms share (Debian's rustc, the sources and packages it unpacks), `cross`; the musl
# toolchain has `musl-toolchain` (bin/lib/musl.bash). No script that holds one runs another that takes it.

# hold_lock NAME: this script holds the lock NAME from now until it ends (its children with it).
hold_lock() {
  exec {HELD_LOCK}>"$(lock_file "$1")"
  flock -n "$HELD_LOCK" && return
  log "waiting for another run that holds the $1 lock"
  flock "$HELD_LOCK"
}

# with_lock NAME COMMAND...: COMMAND under the lock NAME, held only while it runs; a nested call for the same NAME
# runs under its caller's. A failure ends the script (set -e), and the lock with it.
declare -A LOCKS_HELD=()
with_lock() {
  local name=$1 fd status
  shift
  if [ -n "${LOCKS_HELD[$name]:-}" ]; then "$@"; return; fi
  exec {fd}>"$(lock_file "$name")"
  flock -n "$fd" || { log "waiting for another run that holds the $name lock"; flock "$fd"; }
  LOCKS_HELD[$name]=$fd
  "$@"
  status=$? # not 0 only where the caller's || or if turned errexit off
  unset "LOCKS_HELD[$name]"
  exec {fd}>&-
  return $status
}

lock_file() { # lock_file NAME
  local dir=${THRIFT_NATIVE_CACHE:-/var/cache/thrift_native}/locks
  mkdir -p "$dir"
  echo "$dir/$1.lock"
}

# private_apt KIND SUITE ARGS...: apt-get with a private state that sees only SUITE's packages of KIND (an
# architecture, arm64 or amd64, or `source`), its lists fetched on first use in each run; bookworm's binaries with its
# security updates (where rustc-web comes from; the security mirror's source files are not all there).
APT_UPDATED=()
private_apt() {
  local kind=$1 suite=$2 dir=$CACHE/apt-$1-$2 line
  shift 2
  local opts=(-q -o "Dir::Etc::SourceList=$dir/sources.list" -o Dir::Etc::SourceParts=/nonexistent
              -o "Dir::State::Lists=$dir/lists" -o "Dir::Cache=$dir/cache" -o APT::Sandbox::User=root)
  if [ "$kind" = source ]; then
    line="deb-src [signed-by=$KEYRING]"
  else
    line="deb [arch=$kind signed-by=$KEYRING]"
    opts+=(-o Dir::State::status=/dev/null -o "APT::Architecture=$kind" -o "APT::Architectures::=$kind")
  fi
  if [[ " ${APT_UPDATED[*]} " != *" $kind-$suite "* ]]; then
    mkdir -p "$dir/lists/partial" "$dir/cache/archives/partial"
    echo "$line $MIRROR $suite main" >"$dir/sources.list"
    [ "$suite" != bookworm ] || [ "$kind" = source ] ||
      echo "$line http://deb.debian.org/debian-security bookworm-security main" >>"$dir/sources.list"
    apt-get "${opts[@]}" update >/dev/null
    APT_UPDATED+=("$kind-$suite")
  fi
  apt-get "${opts[@]}" "$@"
}

# unpack DEST ARCH SUITE PACKAGE...: those packages' files under DEST (nothing of them is installed), their file names
# in DEST/.packages; absolute symbolic links made relative, so that they point inside DEST (libz.so ->
# /lib/aarch64-linux-gnu/libz.so.1...).
unpack() {
  local dest=$1 arch=$2 suite=$3 debs=$CACHE/debs-$2-$3 link target deb
  shift 3
  rm -rf "$debs" && mkdir -p "$debs" "$dest"
  pushd "$debs" >/dev/null # not a subshell: private_apt notes that it fetched the lists
  private_apt "$arch" "$suite" download "$@" >/dev/null
  popd >/dev/null
  for deb in "$debs"/*.deb; do dpkg-deb -x "$deb" "$dest"; done
  (cd "$debs" && ls) >"$dest/.packages"
  rm -rf "$debs"
  find "$dest" -type l -lname '/*' | while read -r link; do
    target=$(readlink "$link")
    ln -sfn "$(realpath -m --relative-to="$(dirname "$link")" "$dest$target")" "$link"
  done
}

# The release tarball of Ruby MINOR: the shared folder's (3.2, 3.4, 4.0: git archives of the release commits), or
# Debian's source package of the Ruby Debian packages (3.1: bookworm's ruby3.1; 3.3: trixie's ruby3.3; release
# tarballs, configure included), fetched into the cache.
ruby_tarball() { # ruby_tarball MINOR
  local dir found
  case $1 in
    3.1 | 3.3)
      local suite=bookworm dest=$CACHE/sources
      [ "$1" = 3.1 ] || suite=trixie
      found=$(ls "$dest/ruby$1_"*.orig.tar.xz 2>/dev/null | sort -V | tail -1) || true
      if [ -z "$found" ]; then
        log "fetching Debian's ruby$1 source ($suite)"
        mkdir -p "$dest"
        # The Debian part may be gone from the mirror (404); the orig tarball is all that is used.
        (cd "$dest" && private_apt source "$suite" source --download-only "ruby$1" >/dev/null 2>&1 || true)
        found=$(ls "$dest/ruby$1_"*.orig.tar.xz 2>/dev/null | sort -V | tail -1) || true
        [ -n "$found" ] || { log "ruby$1's orig tarball did not arrive"; return 1; }
      fi
      echo "$found"
      ;;
    *)
      for dir in "${THRIFT_NATIVE_SHARED:-}" "$ROOT/../shared" /work/shared; do
        [ -n "$dir" ] || continue
        found=$(ls "$dir/rubies/ruby-$1".*.tar.xz 2>/dev/null | sort -V | tail -1) || true # none in this folder
        [ -n "$found" ] && { echo "$found"; return; }
      done
      log "no rubies/ruby-$1.*.tar.xz in the shared folder (set THRIFT_NATIVE_SHARED)"
      return 1
      ;;
  esac
}

# unpack_ruby TARBALL DIR: the source tree, ready to configure (a git archive gets its configure script; its bundled
# gems' list emptied but for comments, or `make install` would try to download them).
unpack_ruby() {
  rm -rf "$2" && mkdir -p "$2"
  tar -xJf "$1" -C "$2" --strip-components=1
  if [ ! -x "$2/configure" ]; then
    (cd "$2" && ./autogen.sh >/dev/null)
  fi
  if [ -f "$2/gems/bundled_gems" ]; then
    grep '^#' "$2/gems/bundled_gems" >"$2/gems/bundled_gems.new" || true
    mv "$2/gems/bundled_gems.new" "$2/gems/bundled_gems"
  fi
}

# copy_lib RUBY MINOR FILE...: pure-Ruby library files (lib/x.rb, lib/x/) from the shared sources of release MINOR
# (3.2, 3.4) into the site_ruby of the Ruby executable RUBY, where that Ruby has no such library.
copy_lib() {
  local ruby=$1 from=$2 site tar
  shift 2
  site=$("$ruby" -e 'print RbConfig::CONFIG["sitelibdir"]')
  tar=$(ruby_tarball "$from")
  mkdir -p "$site"
  for f in "$@"; do
    tar -xJf "$tar" -C "$site" --strip-components=2 "$(basename "$tar" .tar.xz)/lib/$f"
  done
}

# ensure_libs RUBY: the pure-Ruby libraries that thrift (logger, and base64 before 0.20), Debian's rake (ostruct) and
# the benchmarks (benchmark) require, and that Ruby 3.4 and 4.0 moved to bundled gems, which are not installed here:
# copied from the release sources beside this one where the Ruby executable RUBY lacks them.
ensure_libs() {
  local ruby=$1
  "$ruby" -e 'require "logger"' 2>/dev/null || copy_lib "$ruby" 3.4 logger.rb logger
  "$ruby" -e 'require "ostruct"' 2>/dev/null || copy_lib "$ruby" 3.4 ostruct.rb
  "$ruby" -e 'require "benchmark"' 2>/dev/null || copy_lib "$ruby" 3.4 benchmark.rb
  "$ruby" -e 'require "base64"' 2>/dev/null || copy_lib "$ruby" 3.2 base64.rb
  "$ruby" -W0 -e "$LIBS_REQUIRED"
}

LIBS_REQUIRED='require "logger"; require "ostruct"; require "benchmark"; require "base64"'
has_libs() { "$1" -W0 -e "$LIBS_REQUIRED" >/dev/null 2>&1; } # has_libs RUBY: nothing for ensure_libs to copy
