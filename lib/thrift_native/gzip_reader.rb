# frozen_string_literal: true

require "zlib"
require_relative "gzip_file"

module ThriftNative
  # A Zlib::GzipReader work-alike: same API, results, encodings and exceptions (Zlib's own classes), as the loaded
  # Ruby's zlib has them (docs/gzip_reader_contract.md), inflating with flate2 (zlib-rs) and making no garbage per
  # read. The stream methods are native (ext/thrift_native/src/gzip_reader.rs); `new`'s arguments, `open`, `wrap`,
  # `zcat`, `path` and the loops over single reads (`each_char`, `each_byte`) live here.
  class GzipReader
    include Enumerable

    # new(io, **opts): exactly one positional argument (a Hash given positionally is an ArgumentError, as in Zlib).
    # Options: :encoding ("ext" or "ext:int"), :external_encoding, :internal_encoding, and, when transcoding,
    # :invalid, :undef, :replace; others are ignored.
    def initialize(io, **opts)
      __setup(io, opts.empty? ? nil : opts)
      GzipFile.define_path(self, io)
    end

    # Yields each character; returns nil (not self), as Zlib's.
    def each_char
      return enum_for(:each_char) unless block_given?

      while (c = __getc)
        yield c
      end
      nil
    end

    # Yields each byte; returns nil (not self), as Zlib's.
    def each_byte
      return enum_for(:each_byte) unless block_given?

      while (b = __getbyte)
        yield b
      end
      nil
    end

    class << self
      # Calls initialize(*args, **kw) on a new reader (not a redefined `new`, as Zlib's rb_class_new_instance);
      # with a block, yields it and closes it (and its io) at the end unless the block already closed or finished
      # it, returning the block's value. The io is not closed if initialize raises.
      def wrap(*args, **kw, &block)
        gz = allocate
        gz.send(:initialize, *args, **kw)
        GzipFile.yield_and_close(gz, &block)
      end

      # Opens `filename` ("rb") and wraps it; the File is closed if initialize raises.
      def open(filename, *args, **kw, &block)
        GzipFile.open(self, filename, "rb", args, kw, &block)
      end

      # Every member of `io` until io.size, as Zlib's zcat: with a block, yields lines and returns nil; without,
      # returns all of it (binary). `options` reach `new` positionally, as in Zlib (an ArgumentError on Ruby 3).
      def zcat(*args, &block)
        __arity_error(args.size, "1..2") unless (1..2).cover?(args.size)

        io, *options = args

        buf = nil
        loop do
          gz = new(io, *options)
          if block
            gz.each(&block)
          else
            buf ||= "".b
            buf << gz.read
          end
          gz.read
          pos = io.pos
          unused = gz.unused
          gz.finish
          if unused
            pos -= unused.length
            io.pos = pos
          end
          break unless pos < io.size
        end
        block ? nil : buf
      end

      private

      # The loaded zlib's behaviour where its versions differ, probed on Zlib::GzipReader itself:
      # `read(len, outbuf)` (before zlib 3.1 `read` takes one argument) and whether `eof?` reads ahead.
      def __probe_zlib
        member = Zlib.gzip("probe")
        reader = Zlib::GzipReader.new(ProbeIO.new(member))
        takes_outbuf = begin
          reader.read(0, +"")
          true
        rescue ArgumentError
          false
        end
        io = ProbeIO.new(member, first: 10)
        Zlib::GzipReader.new(io).eof?
        __set_version_behaviour(takes_outbuf, io.reads > 1)
      end
    end

    # An io for the probe: the header alone on the first read (when `first` is given), then the rest.
    class ProbeIO
      attr_reader :reads

      def initialize(bytes, first: nil)
        @chunks = first ? [bytes[0, first], bytes[first..]] : [bytes]
        @reads = 0
      end

      def readpartial(_len, _buf = nil)
        @reads += 1
        @chunks.shift or raise EOFError
      end
    end
    private_constant :ProbeIO

    __probe_zlib
  end
end
