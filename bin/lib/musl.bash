# Sourced by bin/cross-libs and bin/musl-rubies, after bin/lib/debian.bash: the C toolchain for musl targets on this
# x86_64 Debian 12 machine (no Alpine package repository is needed).
# - x86_64: Debian's musl-gcc (musl-tools), a wrapper of gcc over musl's headers and libraries.
# - aarch64: a wrapper of the aarch64-linux-gnu cross gcc with a specs file over a sysroot of Debian's arm64 musl-dev
#   and linux-libc-dev, unpacked (not installed); no outline atomics (libgcc's helpers for them need glibc's
#   __getauxval).
# - an unwinder for Rust's panics: std links -lgcc_s, and Debian's libgcc_s and libgcc_eh need glibc
#   (_dl_find_object). A static libgcc_s.a, found first, made of LLVM's libunwind.a (libunwind-14-dev, or its arm64
#   package) and a __fprintf_chk of our own (that libunwind.a is built for glibc with _FORTIFY_SOURCE, which musl
#   lacks): the libraries then need musl's libc.so alone.
# Kept in THRIFT_NATIVE_CACHE/musl-toolchain/ARCH/.

MUSL_RECIPE=2 # bump when the toolchain below changes
MUSL_DIR=${THRIFT_NATIVE_CACHE:-/var/cache/thrift_native}/musl-toolchain

# The kernel's headers for x86_64 (some configure checks and OpenSSL include linux/ and asm/): the host's, linked.
x86_64_kernel_headers() {
  local dir=$MUSL_DIR/x86_64/kernel-headers
  mkdir -p "$dir"
  ln -sfn /usr/include/linux "$dir/linux"
  ln -sfn /usr/include/x86_64-linux-gnu/asm "$dir/asm"
  ln -sfn /usr/include/asm-generic "$dir/asm-generic"
  echo "$dir"
}

# musl_sysroot aarch64: the arm64 musl sysroot (its dynamic loader for qemu-aarch64 -L).
musl_sysroot() { echo "$MUSL_DIR/$1/sysroot"; }

# musl_cc ARCH: the C compiler for ARCH-linux-musl (made when missing).
# The toolchain is checked and made under its own lock, musl-toolchain (bin/cross-libs and bin/musl-rubies may run
# side by side); so is the unwinder below.
musl_cc() { with_lock musl-toolchain make_musl_cc "$@"; }
make_musl_cc() {
  case $1 in
    x86_64)
      need_packages musl musl-dev musl-tools
      command -v musl-gcc
      ;;
    aarch64)
      local dir=$MUSL_DIR/aarch64 sysroot
      sysroot=$dir/sysroot
      if [ "$(cat "$dir/.recipe" 2>/dev/null)" != "$MUSL_RECIPE" ]; then
        need_packages gcc-aarch64-linux-gnu
        log "unpacking Debian's arm64 musl-dev, libunwind-14-dev and linux-libc-dev into $sysroot"
        rm -rf "$dir"
        unpack "$sysroot" arm64 bookworm musl musl-dev libunwind-14-dev linux-libc-dev
        local libgcc
        libgcc=$(dirname "$(aarch64-linux-gnu-gcc -print-libgcc-file-name)")
        mkdir -p "$dir/bin"
        # musl's libc.so (the musl package's, in lib/) found before the static libc.a of musl-dev (in usr/lib/).
        cat >"$dir/aarch64-linux-musl.specs" <<SPECS
%rename cpp_options old_cpp_options

*cpp_options:
-nostdinc -isystem $sysroot/usr/include/aarch64-linux-musl -isystem $libgcc/include -idirafter $sysroot/usr/include -idirafter $sysroot/usr/include/aarch64-linux-gnu %(old_cpp_options)

*cc1:
%(cc1_cpu) -nostdinc -isystem $sysroot/usr/include/aarch64-linux-musl -isystem $libgcc/include -idirafter $sysroot/usr/include -idirafter $sysroot/usr/include/aarch64-linux-gnu

*link_libgcc:
-L$sysroot/lib/aarch64-linux-musl -L$sysroot/usr/lib/aarch64-linux-musl -L$libgcc

*libgcc:
libgcc.a%s %:if-exists(libgcc_eh.a%s)

*startfile:
%{!shared: $sysroot/usr/lib/aarch64-linux-musl/Scrt1.o} $sysroot/usr/lib/aarch64-linux-musl/crti.o crtbeginS.o%s

*endfile:
crtendS.o%s $sysroot/usr/lib/aarch64-linux-musl/crtn.o

*link:
-dynamic-linker /lib/ld-musl-aarch64.so.1 -nostdlib %{shared:-shared} %{static:-static} %{rdynamic:-export-dynamic}

SPECS
        cat >"$dir/bin/aarch64-linux-musl-gcc" <<SH
#!/bin/sh
# aarch64-linux-musl's C compiler (bin/lib/musl.bash): the cross gcc over the musl sysroot beside it.
exec aarch64-linux-gnu-gcc -mno-outline-atomics -specs "$dir/aarch64-linux-musl.specs" "\$@"
SH
        chmod +x "$dir/bin/aarch64-linux-musl-gcc"
        echo "$MUSL_RECIPE" >"$dir/.recipe"
      fi
      echo "$dir/bin/aarch64-linux-musl-gcc"
      ;;
    *) log "no musl toolchain for $1 (x86_64, aarch64)"; return 1 ;;
  esac
}

# musl_unwinder ARCH: the folder of the static libgcc_s.a for ARCH-linux-musl (made when missing).
musl_unwinder() { with_lock musl-toolchain make_musl_unwinder "$@"; }
make_musl_unwinder() {
  local arch=$1 dir=$MUSL_DIR/$1/unwinder cc libunwind
  if [ "$(cat "$dir/.recipe" 2>/dev/null)" = "$MUSL_RECIPE" ]; then
    echo "$dir"
    return
  fi
  cc=$(musl_cc "$arch")
  if [ "$arch" = x86_64 ]; then
    need_packages libunwind-14-dev
    libunwind=/usr/lib/llvm-14/lib/libunwind.a
  else
    libunwind=$MUSL_DIR/aarch64/sysroot/usr/lib/llvm-14/lib/libunwind.a
  fi
  [ -f "$libunwind" ] || { log "no $libunwind"; return 1; }
  rm -rf "$dir" && mkdir -p "$dir/objects"
  cat >"$dir/fprintf_chk.c" <<'C'
/* The one _FORTIFY_SOURCE entry point Debian's libunwind.a calls; musl has none. */
#include <stdarg.h>
#include <stdio.h>

__attribute__((visibility("hidden"))) int __fprintf_chk(FILE *stream, int flag, const char *format, ...) {
    (void)flag;
    va_list args;
    va_start(args, format);
    int written = vfprintf(stream, format, args);
    va_end(args);
    return written;
}
C
  "$cc" -O2 -fPIC -c "$dir/fprintf_chk.c" -o "$dir/objects/fprintf_chk.o"
  (cd "$dir/objects" && ar x "$libunwind")
  ar rcs "$dir/libgcc_s.a" "$dir"/objects/*.o
  rm -rf "$dir/objects"
  echo "$MUSL_RECIPE" >"$dir/.recipe"
  echo "$dir"
}
