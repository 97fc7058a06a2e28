# Sourced by bin/matrix: the x86_64 platform gems' cells. native-gem (x86_64-linux-gnu) and musl-gem
# (x86_64-linux-musl) build their gem, check what it holds, install it on each Ruby of its libc with no cargo on the
# PATH and use it (NATIVE_GEM_SMOKE); musl-gem then shows which gem each libc's Ruby takes where both are at hand.
# The aarch64 gems' cells are in arm64.bash, which uses the smoke test and the install step from here.

# The Rubies the precompiled gem carries (the Rakefile's NATIVE_RUBIES), each build in lib/thrift_native/<ruby>/.
NATIVE_RUBIES=(3.1 3.2 3.3 3.4 4.0)

native_libs() {
  local minor
  for minor in "${NATIVE_RUBIES[@]}"; do
    [ "$minor" = 3.3 ] && continue
    host_ruby "$minor" >/dev/null
    with_ruby "$minor" ruby /usr/bin/rake compile || return 1
  done
  prepare_root
  in_root sh -c "cd /work/thrift_native && rake compile" || return 1
  mkdir -p lib/thrift_native/3.3
  cp "$TRIXIE/work/thrift_native/lib/thrift_native/3.3/thrift_native.so" lib/thrift_native/3.3/
}

# What the precompiled gem must do wherever it is installed: load from its lib/thrift_native/<ruby>/, be the active
# accelerator, round-trip through the compact protocol and gzip through GzipWriter.
NATIVE_GEM_SMOKE='
gem "thrift_native" unless ENV["GEM_UNPACKED"] # (an unpacked gem is on the load path)
require "thrift"
require "thrift_native"
require "stringio"
ruby = RUBY_VERSION[/\A\d+\.\d+/]
loaded = $LOADED_FEATURES.grep(%r{/thrift_native-[^/]+-#{Gem::Platform.local.cpu}-linux-(gnu|musl)/lib/thrift_native/#{ruby}/thrift_native\.so\z})
abort "the precompiled extension for #{ruby} was not loaded" if loaded.empty?
abort "not the active accelerator: #{ThriftNative.replaced_methods}" unless ThriftNative.active?
t = Thrift::MemoryBufferTransport.new
pr = Thrift::CompactProtocol.new(t)
pr.write_i32(-5)
pr.write_string("h\u00e9llo")
got = [pr.read_i32, pr.read_string]
abort "round trip: #{got.inspect}" unless got == [-5, "h\u00e9llo"]
io = StringIO.new
gz = ThriftNative::GzipWriter.new(io)
gz.write("x" * 1000)
gz.close
# .b: on Ruby 3.1 and 3.2 Zlib.gunzip misreads the header of a UTF-8 string some seconds of the day (ruby/zlib#55).
abort "gzip" unless Zlib.gunzip(io.string.b) == "x" * 1000
puts "#{loaded.first}: Ruby #{RUBY_VERSION}, ok"
'

# The RubyGems that tells -gnu from -musl, which the platform gems require (the Rakefile's NATIVE_RUBYGEMS).
NATIVE_RUBYGEMS=3.3.22

# A command line that installs GEM into DIR (`gem install --local --no-document`) and prints the environment its smoke
# test runs under, for a RubyGems that takes the platform gems; one before NATIVE_RUBYGEMS (Debian 12's 3.3.15) must
# refuse it with the message the README quotes, and the gem is unpacked into DIR instead, its lib/ (GEM_LIB) to be put
# on the load path.
# Run by `sh -c` wherever the gem is tried ("$0" is the gem command, "$1" GEM, "$2" DIR).
INSTALL_OR_UNPACK='
set -e
if ruby -e "exit Gem::Version.new(Gem::VERSION) >= Gem::Version.new(\"'$NATIVE_RUBYGEMS'\")"; then
  "$0" install --local --no-document --install-dir "$2" "$1" >&2
  echo "GEM_HOME=$2 GEM_PATH=$2:$(ruby -e "print Gem.path.join(\":\")")"
else
  if out=$("$0" install --local --no-document --install-dir "$2" "$1" 2>&1); then echo "installed by an old RubyGems" >&2; exit 1; fi
  echo "$out" | grep "requires RubyGems version >= '$NATIVE_RUBYGEMS'" >&2
  "$0" unpack --target "$2" "$1" >&2
  echo "GEM_UNPACKED=1 GEM_LIB=$(ls -d "$2"/thrift_native-*/lib)"
fi
'

gem_lib_of() { sed -n 's/.*GEM_LIB=\([^ ]*\).*/\1/p' <<<"$1"; } # the unpacked gem's lib/ in INSTALL_OR_UNPACK's answer

# GEM installed into a scratch folder on the Ruby executable RUBY (with no cargo on the PATH: only its own bin/ and
# the system's) and used; THRIFT, where given, is a folder of thrift's pure-Ruby library for a Ruby that has none.
prove_gem_on() { # prove_gem_on RUBY GEM [THRIFT]
  local ruby=$1 bin home run thrift=${3:-}
  bin=$(dirname "$ruby")
  home=$(mktemp -d)
  ! PATH="$bin:/usr/bin:/bin" command -v cargo || { log "cargo is on the PATH of $ruby"; return 1; }
  run=$(PATH="$bin:/usr/bin:/bin" sh -c "$INSTALL_OR_UNPACK" "$bin/gem" "$2" "$home") || return 1
  # shellcheck disable=SC2086 # VAR=value words
  env PATH="$bin:/usr/bin:/bin" $run RUBYLIB="$(gem_lib_of "$run")${thrift:+:$thrift}" "$ruby" -e "$NATIVE_GEM_SMOKE" ||
    return 1
  rm -rf "$home"
}

# On this machine's glibc Rubies (3.3 is the minimal root's, below); thrift master's pure-Ruby library where the Ruby
# has no thrift of its own (Debian's ruby-thrift is 3.1's).
prove_native_gem_here() { # prove_native_gem_here GEM
  local minor ruby thrift
  for minor in "${NATIVE_RUBIES[@]}"; do
    [ "$minor" = 3.3 ] && continue
    ruby=$(host_ruby "$minor")
    thrift=""
    [ "$minor" = 3.1 ] || thrift="$(bin/thrift-lib master "$ruby")/lib/rb/lib"
    prove_gem_on "$ruby" "$1" "$thrift" || return 1
  done
}

# In a minimal Debian 13 root: Ruby 3.3 and its gem command, nothing to build with; thrift 0.19's Ruby library.
prove_native_gem_in_minimal_root() { # prove_native_gem_in_minimal_root GEM
  local root=$MATRIX/trixie-min checkout
  if [ ! -x "$root/usr/bin/gem" ]; then
    need_packages debootstrap
    log "debootstrap of a minimal Debian 13 into $root"
    rm -rf "$root"
    debootstrap --variant=minbase --include=ruby trixie "$root" "$MIRROR" >"$LOGS/debootstrap-min.log" 2>&1 ||
      { tail -20 "$LOGS/debootstrap-min.log"; return 1; }
  fi
  checkout=$(bin/thrift-lib 0.19.0 /usr/bin/ruby)
  rm -rf "$root/work" && mkdir -p "$root/work"
  cp -a "$checkout/lib/rb/lib" "$root/work/thrift"
  cp "$1" "$root/work/"
  nothing_to_build_with "$root" || return 1
  chroot "$root" env -i PATH=/usr/bin:/bin HOME=/root sh -c '
    set -e
    gem install --local --no-document /work/'"$(basename "$1")"'
    RUBYLIB=/work/thrift ruby -e '"'$NATIVE_GEM_SMOKE'"
}

# A root the precompiled gem is tried in has no Rust, no C compiler and no libclang.
nothing_to_build_with() { # nothing_to_build_with ROOT
  chroot "$1" env -i PATH=/usr/bin:/bin sh -c '
    for tool in cargo rustc cc gcc clang; do if command -v $tool; then echo "$tool is here"; exit 1; fi; done
    if ls -d /usr/lib/llvm-* /usr/lib/*-linux-gnu/libclang* 2>/dev/null; then echo "libclang is here"; exit 1; fi'
}

# The x86_64 musl Rubies the musl gem is tried on: every Ruby it holds (bin/musl-rubies builds each once per machine),
# with thrift master's pure-Ruby library.
MUSL_GEM_RUBIES=(${MUSL_GEM_RUBIES:-${NATIVE_RUBIES[*]}})

prove_musl_gem() { # prove_musl_gem GEM
  local minor thrift
  thrift="$(bin/thrift-lib master /usr/bin/ruby)/lib/rb/lib"
  for minor in "${MUSL_GEM_RUBIES[@]}"; do
    prove_gem_on "$(musl_ruby "$minor")" "$1" "$thrift" || return 1
  done
}

# With both x86_64 gems at hand, each libc's Ruby takes its own (the musl Ruby 3.4 of bin/musl-rubies, this machine's
# glibc Ruby 3.4 of bin/rubies): `gem install` from a gem repository holding both (as rubygems.org or a mirror would;
# its index made by Ruby 3.2's `gem generate_index`, which RubyGems 3.5 moved out), and Bundler's
# `bundle install --local` from vendor/cache. `gem install --local thrift_native` from a folder holding both .gem files
# takes -gnu on glibc; on musl RubyGems (3.6.9) finds no valid gem: its local source (Gem::Source::Local#find_gem)
# keeps one file per version, the first (-gnu), which the platform check then drops; the README says to name the file
# there. That is checked too, so that a RubyGems that does better shows here.
platform_choice() { # platform_choice GNU_GEM MUSL_GEM
  local dir ruby libc got out bin
  dir=$(mktemp -d)
  mkdir -p "$dir/app/vendor/cache" "$dir/repo/gems"
  cp "$1" "$2" "$dir/app/vendor/cache/"
  cp "$1" "$2" "$dir/repo/gems/"
  bin=$(dirname "$(host_ruby 3.2)")
  PATH="$bin:/usr/bin:/bin" "$bin/gem" generate_index -d "$dir/repo" >/dev/null
  printf 'source "https://rubygems.org"\ngem "thrift_native"\n' >"$dir/app/Gemfile"
  for libc in musl gnu; do
    if [ $libc = musl ]; then ruby=$(musl_ruby 3.4); else ruby=$(host_ruby 3.4); fi
    bin=$(dirname "$ruby")
    rm -rf "$dir/gems" "$dir/app/Gemfile.lock" "$dir/app/.bundle" "$dir/bundle"
    got=$(PATH="$bin:/usr/bin:/bin" "$bin/gem" install --clear-sources --source "file://$dir/repo" --no-document \
      --install-dir "$dir/gems" thrift_native >/dev/null && ls "$dir/gems/gems")
    echo "gem install from a repository of both, on $("$ruby" -e 'print RUBY_PLATFORM'): $got"
    [[ "$got" == *"-x86_64-linux-$libc" ]] || { log "gem install took $got on $libc"; return 1; }
    got=$(cd "$dir/app" && PATH="$bin:/usr/bin:/bin" BUNDLE_PATH="$dir/bundle" "$bin/bundle" install --local >/dev/null &&
      PATH="$bin:/usr/bin:/bin" BUNDLE_PATH="$dir/bundle" "$bin/bundle" exec ruby -e \
        'print Gem.loaded_specs["thrift_native"].full_name')
    echo "bundle install --local from vendor/cache of both, on $("$ruby" -e 'print RUBY_PLATFORM'): $got"
    [[ "$got" == *"-x86_64-linux-$libc" ]] || { log "Bundler took $got on $libc"; return 1; }
    rm -rf "$dir/gems"
    if out=$(cd "$dir/app/vendor/cache" && PATH="$bin:/usr/bin:/bin" "$bin/gem" install --local --no-document \
      --install-dir "$dir/gems" thrift_native 2>&1); then
      got=$(ls "$dir/gems/gems")
    else
      got="none: $(echo "$out" | tail -1)"
    fi
    echo "gem install --local thrift_native in a folder of both, on $("$ruby" -e 'print RUBY_PLATFORM'): $got"
    [[ "$got" == *"-x86_64-linux-$libc" ]] || [[ $libc = musl && "$got" == *"Could not find a valid gem"* ]] ||
      { log "gem install --local took $got on $libc"; return 1; }
  done
  rm -rf "$dir"
}

# The gem holds one library per Ruby of the precompiled gems, each an ELF of MACHINE (readelf's name), and no other
# ELF file; `file` says what each is.
only_machine() { # only_machine GEM MACHINE
  local dir minor so
  need_packages file
  dir=$(mktemp -d)
  tar -xOf "$1" data.tar.gz | tar -xzf - -C "$dir"
  for minor in "${NATIVE_RUBIES[@]}"; do
    [ -f "$dir/lib/thrift_native/$minor/thrift_native.so" ] || { log "$1 has no library for Ruby $minor"; return 1; }
  done
  while IFS= read -r -d '' so; do
    echo "${so#"$dir"/}: $(file -b "$so")"
    readelf -h "$so" | grep -q "Machine: .*$2" || { log "${so#"$dir"/} is no $2 ELF"; return 1; }
  done < <(find "$dir" -type f -exec sh -c 'head -c4 "$1" | grep -q "ELF"' sh {} \; -print0 | sort -z)
  rm -rf "$dir"
}

# The newest gem of a platform in pkg/, built first when NEW is given or none is there.
platform_gem() { # platform_gem PLATFORM [new]
  local gem
  gem=$(ls -t pkg/thrift_native-*-"$1".gem 2>/dev/null | head -1) || true
  if [ -z "$gem" ] || [ -n "${2:-}" ]; then
    rake "native:gem:$1" >&2 || return 1
    gem=$(ls -t pkg/thrift_native-*-"$1".gem | head -1)
  fi
  echo "$gem"
}

native_gem_cell() {
  local gem
  gem=$(platform_gem x86_64-linux-gnu new) || return 1
  only_machine "$gem" X86-64 && prove_native_gem_here "$gem" && prove_native_gem_in_minimal_root "$gem"
}

# The musl gem, and the glibc one beside it for the platform choice (the one native-gem built, where it did).
musl_gem_cell() {
  local musl gnu
  musl=$(platform_gem x86_64-linux-musl new) || return 1
  only_machine "$musl" X86-64 || return 1
  gnu=$(platform_gem x86_64-linux-gnu) || return 1
  prove_musl_gem "$musl" && platform_choice "$gnu" "$musl"
}
