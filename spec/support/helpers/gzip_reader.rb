# frozen_string_literal: true

require "stringio"
require "zlib"
require_relative "gzip_writer"

# What the ThriftNative::GzipReader specs (spec/unit/gzip_reader/) share. Zlib::GzipReader of the running Ruby is
# the oracle: the same steps run on a reader of each class over its own copy of the input, and their transcripts
# (every result with its encoding, every exception with its class, message and `input`, the position, lineno and
# the calls the io saw) must be equal.
module GzipReaderHelpers
  include GzipWriterHelpers

  def readers = [Zlib::GzipReader, ThriftNative::GzipReader].freeze

  # Whether the running Ruby's zlib takes `read(len, outbuf)` (zlib 3.1+).
  def read_takes_outbuf?
    Zlib::GzipReader.new(StringIO.new(Zlib.gzip("x"))).read(0, +"")
    true
  rescue ArgumentError
    false
  end

  # A value as the transcript records it: Strings with their encoding, exceptions with their `input`.
  def shown(value)
    case value
    when String then [:string, value.b, value.encoding.name, value.frozen?]
    when Array then value.map { |v| shown(v) }
    when Time then [:time, value.to_i]
    when Zlib::GzipReader, ThriftNative::GzipReader then :reader
    when Numeric, Symbol, Encoding, nil, true, false then value
    else [:object, value.class.name]
    end
  end

  # [:ok, value] or [exception class, message, input].
  def step
    [:ok, shown(yield)]
  rescue StandardError, ScriptError => e
    # (The message's first line only, error_highlight appends the caller's source; object addresses masked.)
    message = e.message.lines.first.to_s.chomp.gsub(/0x\h+/, "0x...")
    [e.class, message, e.message.encoding.name, e.respond_to?(:input) ? shown(e.input) : :no_input]
  end

  # An io over `bytes` that records each call Zlib makes of it: readpartial and read (with whether a buffer was
  # lent), seek, pos, close. `chunk` caps what one read returns (nil: what is asked).
  class ReplayIO
    attr_reader :calls

    def initialize(bytes, chunk: nil)
      @io = StringIO.new(bytes.b)
      @chunk = chunk
      @calls = []
    end

    def readpartial(len, buf = nil)
      @calls << [:readpartial, len, !buf.nil?]
      len = [len, @chunk].min if @chunk
      buf ? @io.readpartial(len, buf) : @io.readpartial(len)
    end

    def seek(offset, whence)
      @calls << [:seek, offset, whence]
      @io.seek(offset, whence)
    end

    def pos
      @io.pos
    end

    def pos=(n)
      @io.pos = n
    end

    def size = @io.size

    def close
      @calls << [:close]
      nil
    end
  end

  # An io with `read` only: Zlib falls back to it on every chunk.
  class ReadOnlyIO
    attr_reader :calls

    def initialize(bytes)
      @io = StringIO.new(bytes.b)
      @calls = []
    end

    def read(len, buf = nil)
      @calls << [:read, len, !buf.nil?]
      @io.read(len, buf)
    end
  end

  # The io kinds the specs run each case over.
  def make_io(kind, bytes)
    case kind
    when :stringio then StringIO.new(bytes.b)
    when :replay then ReplayIO.new(bytes)
    when :small_chunks then ReplayIO.new(bytes, chunk: 7)
    when :read_only then ReadOnlyIO.new(bytes)
    when :pipe then pipe_with(bytes)
    else raise ArgumentError, kind.to_s
    end
  end

  def pipe_with(bytes)
    r, w = IO.pipe
    r.binmode
    Thread.new do
      w.write(bytes)
    rescue IOError, Errno::EPIPE
      nil
    ensure
      w.close
    end
    r
  end

  # Runs `steps` (name => lambda of the reader) on a reader of `klass` over a new `io_kind` io of `bytes`: the
  # transcript of `new`, each step with the position and lineno after it, and the io's calls (but for :small_chunks,
  # where how much a 7-byte chunk inflates to differs by zlib version, and so when the next chunk is read).
  def transcript(klass, bytes, steps, io_kind: :replay, **opts)
    io = make_io(io_kind, bytes)
    gz = nil
    log = [[:new, step { gz = klass.new(io, **opts) }]]
    return log + [[:io, io.respond_to?(:calls) ? io.calls : nil]] unless gz

    steps.each do |name, action|
      log << [name, step { action.call(gz) }, step { gz.pos }, step { gz.lineno }]
    end
    log << [:io, io.respond_to?(:calls) && io_kind != :small_chunks ? io.calls : nil]
    log << [:close, step { gz.close }, step { gz.closed? }]
    log
  ensure
    io.close if io.is_a?(IO) && !io.closed?
  end

  # Expects both readers' transcripts of `steps` over `bytes` to be equal (the first difference reported).
  def expect_same_transcript(bytes, steps, **opts)
    theirs, ours = readers.map { |k| transcript(k, bytes, steps, **opts) }
    theirs.zip(ours).each_with_index do |(t, o), i|
      next if o == t

      at = t.flatten(1).zip(o.flatten(1)).index { |a, b| a != b } || 0
      expect(o).to eq(t), "step #{i} (#{t.first}) differs from its part #{at}: " \
                          "Zlib #{t.flatten(1)[at, 4].inspect[0, 600]}\nours #{o.flatten(1)[at, 4].inspect[0, 600]}"
    end
    expect(ours.size).to eq(theirs.size)
  end

  # Text with multi-byte characters, blank lines and CRLFs, `lines` lines long.
  def text_lines(lines, seed: 1)
    rng = Random.new(seed)
    words = %w[alpha beta gamma é ü 日本 naïve x y\r z] + [""]
    Array.new(lines) { Array.new(rng.rand(0..8)) { words.sample(random: rng) }.join(" ") + "\n" }.join
  end

  def random_bytes(n, seed: 2)
    Random.new(seed).bytes(n)
  end

  # A member of `data` as `writer` (Zlib's or ours) writes it.
  def member(data, writer: Zlib::GzipWriter, level: nil, name: nil, comment: nil, mtime: 1_600_000_000)
    gzip_with(writer, level, mtime: mtime) do |gz|
      gz.orig_name = name if name
      gz.comment = comment if comment
      gz.write(data)
    end
  end
end
