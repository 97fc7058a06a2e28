# frozen_string_literal: true

module ThriftNative
  # What GzipWriter and GzipReader share of Zlib::GzipFile: `path`, and `wrap`'s and `open`'s block, after which
  # the stream (and its io) is closed unless the block already closed or finished it.
  module GzipFile
    # Zlib's `path`: when the io has one, it is read once and answered by a singleton method of the stream (none
    # when the io raises IOError for it).
    def self.define_path(gz, io)
      return unless io.respond_to?(:path)

      begin
        path = io.path
        gz.define_singleton_method(:path) { path }
      rescue IOError
        nil
      end
    end

    # `klass.open`: the file opened in `mode` and handed to a new stream's initialize (not to a redefined `new`, as
    # Zlib's rb_class_new_instance), the file closed if initialize raises; then as `yield_and_close`.
    def self.open(klass, filename, mode, args, kw, &block)
      file = File.open(filename, mode)
      begin
        gz = klass.allocate
        gz.send(:initialize, file, *args, **kw)
      rescue Exception # rubocop:disable Lint/RescueException
        file.close
        raise
      end
      yield_and_close(gz, &block)
    end

    # Yields `gz` to the block and closes it after, returning the block's value; without a block, returns `gz`.
    def self.yield_and_close(gz)
      return gz unless block_given?

      begin
        yield gz
      ensure
        gz.close if gz.send(:__stream_ready?)
      end
    end
  end
end
