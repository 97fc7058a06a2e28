# frozen_string_literal: true

require "zlib"
require_relative "gzip_file"

module ThriftNative
  # A Zlib::GzipWriter work-alike: same API, same header bytes, same exceptions (Zlib's own classes), faster
  # compression (flate2 with zlib-rs) and no garbage per write. The stream methods are native
  # (ext/thrift_native/src/gzip_writer.rs); argument parsing, `open`, `wrap` and `path` live here.
  class GzipWriter
    # new(io, level = nil, strategy = nil, **opts). A trailing Hash is the options only when more than one argument
    # is given, as in Zlib. Options: :encoding ("ext" or "ext:int"), :external_encoding, :internal_encoding.
    def initialize(*args, **kw)
      opts = kw.empty? ? nil : kw
      if opts.nil? && args.size > 1 && (hash = Hash.try_convert(args.last))
        args.pop
        opts = hash
      end
      raise ArgumentError, "wrong number of arguments (given #{args.size}, expected 1..3)" unless (1..3).cover?(args.size)

      io, level, strategy = args
      __setup(io, level, strategy, opts && GzipWriter.__conversion_target(opts))
      GzipFile.define_path(self, io)
    end

    class << self
      # Calls new(*args, **kw); with a block, yields the writer and closes it (and its io) at the end unless the
      # block already closed or finished it, returning the block's value.
      def wrap(*args, **kw, &block)
        gz = new(*args, **kw)
        GzipFile.yield_and_close(gz, &block)
      end

      # Opens `filename` with "wb" and wraps it; the File is closed if initialize raises.
      def open(filename, *args, **kw, &block)
        GzipFile.open(self, filename, "wb", args, kw, &block)
      end

      # The Encoding written Strings are converted to, as IO#set_encoding reads these options (the external
      # encoding when an internal one is in effect and differs from it), or nil for no conversion.
      def __conversion_target(opts)
        ext, int = opts[:encoding].to_s.split(":", 2) if opts[:encoding]
        ext = opts[:external_encoding] if opts.key?(:external_encoding)
        int = opts[:internal_encoding] if opts.key?(:internal_encoding)
        ext = ext && Encoding.find(ext.to_s)
        int = int && int.to_s != "-" ? Encoding.find(int.to_s) : nil
        ext ||= Encoding.default_external
        return nil if ext == Encoding::BINARY

        int ||= Encoding.default_internal
        return nil if int.nil? || int == ext

        ext
      end
    end
  end
end
