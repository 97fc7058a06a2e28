# frozen_string_literal: true

require "stringio"
require "tempfile"
require "pathname"
require "open3"
require "digest"
require "zlib"
require_relative "../fixtures/recording_io"

# What the ThriftNative::GzipWriter specs (spec/unit/gzip_writer/) share. They check it side by side with
# Zlib::GzipWriter: wherever the behaviour must match, Zlib is the oracle (same header bytes, same decompressed
# content, same exception class and message, same calls on io). Each of them opens with `include GzipWriterHelpers`.
module GzipWriterHelpers
  SPECS = File.expand_path("../../unit/gzip_writer", __dir__)

  # The writer under test, and both writers: the oracle first.
  def ours = ThriftNative::GzipWriter
  def both = [Zlib::GzipWriter, ThriftNative::GzipWriter].freeze

  # [:ok, value] or [exception class, message].
  # (The message's first line only: error_highlight appends the caller's source line.)
  def outcome
    [:ok, yield]
  rescue StandardError, ScriptError => e
    [e.class, e.message.lines.first.to_s.chomp]
  end

  def gunzip_with_reader(bytes)
    Zlib::GzipReader.new(StringIO.new(bytes)).read
  end

  # `gzip -dc` of all members, as a String; raises when gzip reports an error.
  def gunzip_with_command(bytes)
    out, err, status = Open3.capture3("gzip", "-dc", stdin_data: bytes, binmode: true)
    raise "gzip -dc failed: #{err}" unless status.success?

    out.b
  end

  # Compares [bytesize, SHA-256] so that a failure does not dump megabytes of binary.
  def digest(bytes)
    [bytes.bytesize, Digest::SHA256.hexdigest(bytes)]
  end

  def expect_decodes(bytes, expected)
    expect(digest(gunzip_with_reader(bytes))).to eq(digest(expected.b))
    expect(digest(gunzip_with_command(bytes))).to eq(digest(expected.b))
  end

  # Runs the block with a writer of `klass` on a StringIO (mtime fixed unless told) and returns the bytes written.
  def gzip_with(klass, *args, mtime: 1_600_000_000, **kw)
    io = StringIO.new("".b)
    gz = klass.new(io, *args, **kw)
    gz.mtime = mtime if mtime
    yield gz
    gz.close unless gz.closed?
    io.string
  end

  def pattern(size)
    ((0..255).map(&:chr).join * ((size / 256) + 1)).byteslice(0, size)
  end

  # Text to compress: the GzipWriter specs' own source, twenty times over.
  def text_corpus
    @text_corpus ||= (Dir[File.join(SPECS, "*_spec.rb")].sort.map { |f| File.read(f) }.join * 20).b
  end
end

# each_slice for the bytes of a String (test helper).
class String
  def each_slice_bytes(n)
    (0...bytesize).step(n) { |i| yield byteslice(i, n) }
  end
end
