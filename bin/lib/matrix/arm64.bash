# Sourced by bin/matrix after gems.bash: the aarch64 platform gems' cells, under emulation (qemu-user) on this x86_64
# machine. aarch64-gem installs the aarch64-linux-gnu gem in arm64 Debian roots and runs there the specs of what
# differs by architecture; aarch64-musl-gem installs the aarch64-linux-musl gem on an aarch64 musl Ruby and uses it.

# The aarch64-linux-gnu gem under emulation, in arm64 roots (debootstrap; their programs run by qemu-user-static through
# binfmt_misc) that have nothing to build with: Debian 12's (Ruby 3.1, RSpec, Debian's thrift 0.14, whose C
# accelerator is built for arm64) and, where ARM64_SUITES="bookworm trixie" asks for it, Debian 13's (Ruby 3.3,
# RSpec; thrift 0.19's Ruby library copied in, as for the minimal x86_64 root): CI leaves it out for time (its
# emulated debootstrap and specs took about 8 minutes of a core). The gem is installed in each; the work tree's specs
# run there against its lib/.
# shellcheck disable=SC2206 # suite names are words
ARM64_SUITES=(${ARM64_SUITES:-bookworm})
arm64_dir() { echo "$MATRIX/$1-arm64"; }
arm64_packages() { if [ "$1" = bookworm ]; then echo ruby,ruby-rspec,ruby-thrift; else echo ruby,ruby-rspec; fi; }
# What runs there, one rspec per entry (SUITE, then its arguments), side by side: emulated Ruby runs at about a tenth
# of native speed, a child Ruby starts in about 2 s. What differs by architecture: the C accelerator (on 3.1, Debian's
# arm64 build: the protocol differential; the struct differential's per-protocol examples, 15 of its 51, as the others
# run the same codec over transports and decorators, whose in-place buffers the layout specs cover), what reads Ruby's
# object layout (ivar slots and stores, GC, the struct codec, the buffers the fast paths read and append to in place;
# on 3.1, before object shapes, and on 3.3) and the gzip code's checksums (crc32fast and zlib pick per-CPU code). The
# rest of the suite is the same Rust and Ruby on every machine and runs natively in the other cells.
ARM64_LAYOUT_SPECS="spec/unit/ivar_access_spec.rb spec/unit/ivar_store_spec.rb spec/unit/gc_spec.rb
  spec/unit/string_append_spec.rb spec/unit/struct_codec_spec.rb spec/unit/memory_buffer_transport_spec.rb
  spec/unit/binary_protocol_accelerated_spec.rb"
ARM64_SPECS=(
  "bookworm spec/integration/differential_spec.rb spec/integration/struct_differential_spec.rb:15"
  "bookworm $ARM64_LAYOUT_SPECS spec/unit/gzip_writer spec/unit/gzip_reader"
  "trixie $ARM64_LAYOUT_SPECS"
)

# arm64 programs run by qemu-aarch64-static, registered with binfmt_misc with the F flag (the interpreter is opened
# now, so it serves inside a chroot too).
arm64_emulation() {
  need_packages qemu-user-static
  [ -e /proc/sys/fs/binfmt_misc/register ] || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
  [ -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ] ||
    cat /usr/lib/binfmt.d/qemu-aarch64.conf >/proc/sys/fs/binfmt_misc/register
}

unmount_under() { # unmount_under DIR: whatever a failed step left mounted there (deepest first), before rm -rf
  findmnt -rn -o TARGET | grep -F "$1/" | sort -r | while read -r target; do umount -l "$target" || true; done
}

arm64_root() { # arm64_root SUITE
  local dir
  dir=$(arm64_dir "$1")
  [ -x "$dir/usr/bin/rspec" ] && return
  local try
  for try in 1 2; do # a second try: a mirror caught mid-sync or an emulated step that failed once
    log "debootstrap of an arm64 $1 into $dir (under emulation: some minutes; try $try)"
    unmount_under "$dir"
    rm -rf "$dir"
    debootstrap --arch=arm64 --variant=minbase --include="$(arm64_packages "$1")" "$1" "$dir" "$MIRROR" \
      >"$LOGS/debootstrap-$1-arm64.log" 2>&1 && return
    log "debootstrap of an arm64 $1 failed; its log ends:"
    tail -20 "$LOGS/debootstrap-$1-arm64.log" | sed 's/^/bin\/matrix: | /' >&2
  done
  return 1
}

in_arm64() { # in_arm64 SUITE COMMAND...: in that root, with thrift 0.19's library on the load path in Debian 13's
  local suite=$1 thrift=()
  shift
  [ "$suite" = bookworm ] || thrift=(RUBYLIB=/work/thrift)
  chroot "$(arm64_dir "$suite")" env -i HOME=/root PATH=/usr/bin:/bin LANG=C.UTF-8 "${thrift[@]}" "$@"
}

# The gem installed in a root and used (the smoke test), then the specs and their generated code (this machine's
# thrift compiler: Debian 12's) copied in, with the installed gem's lib/ as the tree's lib/.
install_in_arm64() { # install_in_arm64 SUITE GEM
  local dir work gem_lib run
  dir=$(arm64_dir "$1")
  work=$dir/work/thrift_native
  nothing_to_build_with "$dir" || return 1
  mountpoint -q "$dir/proc" || { mount -t proc proc "$dir/proc"; MOUNTED+=("$dir/proc"); }
  mountpoint -q "$dir/dev" || mount_into /dev "$dir/dev"
  echo "127.0.0.1 localhost" >"$dir/etc/hosts"
  rm -rf "$dir/work" && mkdir -p "$work"
  [ "$1" = bookworm ] || cp -a "$(bin/thrift-lib 0.19.0 /usr/bin/ruby)/lib/rb/lib" "$dir/work/thrift"
  cp "$2" "$dir/work/"
  run=$(in_arm64 "$1" sh -c "$INSTALL_OR_UNPACK" gem "/work/$(basename "$2")" /work/gems) || return 1
  local lib
  lib=$(gem_lib_of "$run")
  # shellcheck disable=SC2086 # VAR=value words
  in_arm64 "$1" $run ${lib:+RUBYLIB=$lib} ruby -e "$NATIVE_GEM_SMOKE" || return 1
  git ls-files -z --cached spec test_support .rspec | tar --null -T - -cf - | tar -xf - -C "$work"
  tar -cf - tmp/gen-rb | tar -xf - -C "$work"
  gem_lib=$(ls -d "$dir"/work/gems/thrift_native-*/lib "$dir"/work/gems/gems/thrift_native-*/lib 2>/dev/null | head -1)
  ln -s "${gem_lib#"$dir"}" "$work/lib"
}

# The aarch64-linux-gnu gem built while the roots are made (each mostly on one core), installed in each root, then
# ARM64_SPECS side by side.
aarch64_gem_cell() {
  local suite gem i pids=() failed=0 start=$SECONDS
  need_packages debootstrap thrift-compiler
  arm64_emulation
  for suite in "${ARM64_SUITES[@]}"; do
    arm64_root "$suite" &
    pids+=($!)
  done
  rake native:gem:aarch64-linux-gnu || failed=1
  for i in "${pids[@]}"; do wait "$i" || failed=1; done
  [ $failed = 0 ] || return 1
  echo "aarch64-gem: the gem built and the roots made in $((SECONDS - start)) s"
  gem=$(ls -t pkg/thrift_native-*-aarch64-linux-gnu.gem | head -1)
  only_machine "$gem" AArch64 || return 1
  ruby -r ./test_support/codec_types -e 'CodecTypes.generate' >/dev/null
  for suite in "${ARM64_SUITES[@]}"; do install_in_arm64 "$suite" "$gem" || return 1; done
  echo "aarch64-gem: installed and smoke-tested in ${ARM64_SUITES[*]} at $((SECONDS - start)) s"
  pids=()
  for i in "${!ARM64_SPECS[@]}"; do
    set -- ${ARM64_SPECS[$i]}
    [[ " ${ARM64_SUITES[*]} " == *" $1 "* ]] || continue
    in_arm64 "$1" sh -c "cd /work/thrift_native && rspec ${*:2}" >"$LOGS/aarch64-gem-rspec-$i.log" 2>&1 &
    pids[i]=$! # indexed as ARM64_SPECS
  done
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || failed=1
    echo "${ARM64_SPECS[$i]%% *} (Ruby $(in_arm64 "${ARM64_SPECS[$i]%% *}" ruby -e 'print RUBY_VERSION')): rspec" \
      "$(echo "${ARM64_SPECS[$i]#* }" | tr -s ' \n' ' ')"
    grep -E "^[0-9]+ examples?, |^Finished in|^rspec \./" "$LOGS/aarch64-gem-rspec-$i.log" ||
      tail -20 "$LOGS/aarch64-gem-rspec-$i.log"
  done
  echo "aarch64-gem: the specs done at $((SECONDS - start)) s"
  return $failed
}

# The aarch64-linux-musl gem under emulation: installed on the aarch64 musl Ruby 3.4 (bin/musl-rubies, cross-built;
# run by qemu-aarch64 over the musl sysroot) with no cargo on the PATH, and used.
prove_aarch64_musl_gem() { # prove_aarch64_musl_gem GEM
  local prefix run home thrift
  prefix=$(bin/musl-rubies aarch64 3.4 | cut -d' ' -f3) || return 1
  ! PATH="$prefix/bin:/usr/bin:/bin" command -v cargo || { log "cargo is on the PATH of $prefix/bin/ruby"; return 1; }
  run=$(bin/musl-rubies --run aarch64)
  home=$(mktemp -d)
  thrift="$(bin/thrift-lib master /usr/bin/ruby)/lib/rb/lib"
  # shellcheck disable=SC2086 # the runner is words
  PATH="$prefix/bin:/usr/bin:/bin" $run "$prefix/bin/ruby" "$prefix/bin/gem" install --local --no-document \
    --install-dir "$home" "$1" || return 1
  # shellcheck disable=SC2086
  PATH="$prefix/bin:/usr/bin:/bin" GEM_HOME=$home GEM_PATH=$home RUBYLIB=$thrift $run "$prefix/bin/ruby" \
    -e "$NATIVE_GEM_SMOKE" || return 1
  rm -rf "$home"
}

aarch64_musl_gem_cell() {
  local gem
  gem=$(platform_gem aarch64-linux-musl new) || return 1
  only_machine "$gem" AArch64 && prove_aarch64_musl_gem "$gem"
}
