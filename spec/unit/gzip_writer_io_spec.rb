# frozen_string_literal: true

require "stringio"
require "tempfile"
require "zlib"

# The IOs whose IO#write does more than copy bytes, which ThriftNative::GzipWriter must leave to IO#write (its direct
# path, rb_io_bufwrite, is only for IOs that would merely copy): files that convert on write, an IO whose writes go
# to another IO, $stdout's SIGPIPE. Zlib::GzipWriter, which always calls io.write, is the oracle.
RSpec.describe "ThriftNative::GzipWriter on IOs whose write converts, redirects or signals" do
  both = [Zlib::GzipWriter, ThriftNative::GzipWriter].freeze
  text = ("h\u00e9llo w\u00f6rld & <tags>\n" * 400).freeze
  # Compressed, random bytes hold every byte value: newlines, & and < for the decorators, invalid UTF-8.
  data = (Random.new(5).bytes(20_000) + text.b).freeze

  def outcome
    [:ok, yield]
  rescue StandardError => e
    [e.class, e.message]
  end

  # For a writer of each class: what writing and closing through a file opened with `mode` and `opts` gave, and
  # whether the file holds what IO#write of that writer's stream (as it writes into a StringIO) leaves there. The
  # streams themselves differ: the deflaters do.
  def file_results(classes, mode, opts, data)
    classes.map do |klass|
      stream = StringIO.new("".b)
      gzip(klass, stream, data)
      Tempfile.create("gzw") do |t|
        result = File.open(t.path, mode, **opts) { |f| outcome { gzip(klass, f, data) } }
        written = File.binread(t.path)
        File.open(t.path, mode, **opts) { |f| outcome { f.write(stream.string) } }
        [result, written == File.binread(t.path)]
      end
    end
  end

  def gzip(klass, io, data)
    gz = klass.new(io)
    gz.mtime = 1_600_000_000
    gz.write(data)
    gz.close
    :closed
  end

  [["wb", {}], ["w", {}], ["w:UTF-8", {}], ["w:ISO-8859-1:UTF-8", {}], ["w", { crlf_newline: true }],
   ["w", { xml: :text }], ["w", { external_encoding: "UTF-16LE" }], ["w", { universal_newline: true }]].each do |mode, opts|
    it "writes to a File opened #{mode.inspect} #{opts} as Zlib does (bytes or exception)" do
      zlib, ours = file_results(both, mode, opts, data)
      expect(ours).to eq(zlib)
    end
  end

  it "converts nothing for a binary File, so the stream decodes to the data" do
    Tempfile.create("gzw") do |t|
      File.open(t.path, "wb") { |f| gzip(ThriftNative::GzipWriter, f, text) }
      expect(gunzip(File.binread(t.path)).force_encoding(Encoding::UTF_8)).to eq(text)
    end
  end

  it "writes through an IO whose writes go to a second IO (a duplex popen) as Zlib does" do
    results = both.map do |klass|
      IO.popen(["cat"], "r+") do |io|
        gz = klass.new(io)
        gz.mtime = 1_600_000_000
        gz.write(text)
        gz.finish
        io.close_write
        io.read
      end
    end
    expect(results.map { |bytes| gunzip(bytes).force_encoding(Encoding::UTF_8) }).to eq([text, text])
  end

  it "writes into a File that another writer closed as Zlib does (IOError)" do
    results = both.map do |klass|
      Tempfile.create("gzw") do |t|
        f = File.open(t.path, "wb")
        gz = klass.new(f)
        f.close
        outcome { gz.write(Random.new(3).bytes(100_000)) && gz.flush }
      end
    end
    expect(results[1]).to eq(results[0])
    expect(results[1].first).to eq(IOError)
  end

  # $stdout (like STDERR) raises SIGPIPE where a write to a closed pipe fails: a gzip filter whose reader went away
  # ends quietly, as `ruby -e 'loop { puts 1 }' | head -1` does.
  it "dies of SIGPIPE on a $stdout whose reader is gone, as Zlib does" do
    writer = <<~'RUBY'
      klass = ARGV[0] == "ours" ? (require "thrift_native"; ThriftNative::GzipWriter) : (require "zlib"; Zlib::GzipWriter)
      gz = klass.new($stdout)
      chunk = Random.new(1).bytes(64 * 1024)
      loop { gz.write(chunk); gz.flush }
    RUBY
    signals = %w[zlib ours].map do |which|
      rd, wr = IO.pipe
      pid = Process.spawn(RbConfig.ruby, "-I", SpecSupport::LIB, "-e", writer, which, out: wr, err: File::NULL)
      wr.close
      rd.read(10)
      rd.close
      Process.wait(pid)
      [$?.signaled?, $?.termsig]
    end
    expect(signals).to eq([[true, Signal.list.fetch("PIPE")]] * 2)
  end
end
