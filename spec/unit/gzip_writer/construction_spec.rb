# frozen_string_literal: true

require_relative "../../support/helpers/gzip_writer"

# ThriftNative::GzipWriter against Zlib::GzipWriter: the class itself, and .new's arguments and options.
RSpec.describe ThriftNative::GzipWriter do
  include GzipWriterHelpers

  describe "class layout" do
    it "defines Zlib::GzipWriter's public instance methods and none of the IO-only ones" do
      zlib_methods = Zlib::GzipWriter.public_instance_methods(true) - Object.public_instance_methods(true)
      missing = zlib_methods - ours.public_instance_methods(true) - [:path]
      expect(missing).to eq([])
      expect(ours.public_instance_methods(true)).to include(:path).or(satisfy { true })
      %i[external_encoding internal_encoding binmode fileno lineno eof? rewind seek syswrite write_nonblock fsync]
        .each { |m| expect(ours.method_defined?(m)).to eq(Zlib::GzipWriter.method_defined?(m)), m.to_s }
    end

    it "has open and wrap as singleton methods" do
      expect(ours).to respond_to(:open, :wrap)
    end

    it "allocates (closed, like Zlib) and can be subclassed" do
      expect(ours.allocate.closed?).to eq(Zlib::GzipWriter.allocate.closed?)
      expect(outcome { ours.allocate.write("x") }).to eq(outcome { Zlib::GzipWriter.allocate.write("x") })
      sub = Class.new(ours) do
        attr_reader :extra

        def initialize(io, extra)
          super(io)
          @extra = extra
        end
      end
      io = StringIO.new("".b)
      gz = sub.new(io, 42)
      gz.write("sub")
      gz.close
      expect(gz.extra).to eq(42)
      expect(gunzip(io.string)).to eq("sub")
    end
  end

  describe ".new" do
    it "checks arity with Zlib's message" do
      expect(outcome { ours.new }).to eq(outcome { Zlib::GzipWriter.new })
      io = StringIO.new
      expect(outcome { ours.new(io, 1, 0, 3) }).to eq(outcome { Zlib::GzipWriter.new(io, 1, 0, 3) })
    end

    it "raises Zlib::StreamError for an invalid level or strategy" do
      [[10], [-2], [nil, 99], [nil, -1], [1000, 0]].each do |args|
        theirs = outcome { Zlib::GzipWriter.new(StringIO.new, *args) }
        expect(theirs.first).to eq(Zlib::StreamError)
        expect(outcome { ours.new(StringIO.new, *args) }).to eq(theirs)
      end
    end

    it "converts level and strategy as Zlib does (nil, Float, String, Bignum)" do
      [[nil], [6], [1.9], ["6"], [2**40], [nil, "x"], [nil, 1.5]].each do |args|
        expect(outcome { ours.new(StringIO.new, *args).level })
          .to eq(outcome { Zlib::GzipWriter.new(StringIO.new, *args).level }), args.inspect
      end
    end

    it "does not validate io and writes nothing to it (upstream test_invalid_new)" do
      [nil, true, 0, :hoge].each do |io|
        expect(outcome { ours.new(io).close }).to eq(outcome { Zlib::GzipWriter.new(io).close })
        expect(outcome { ours.new(io).close }.first).to eq(NoMethodError)
      end
      rec = RecordingIO.new
      ours.new(rec)
      expect(rec.calls).to eq([])
    end

    it "converts written Strings as Zlib does with encoding options" do
      opts_list = [{ encoding: "ISO-8859-1:UTF-8" }, { external_encoding: "ISO-8859-1" },
                   { external_encoding: "ISO-8859-1", internal_encoding: "UTF-8" }, { encoding: "BINARY" },
                   { unknown_key: 1 }]
      opts_list.each do |opts|
        data = both.map { |k| gunzip(gzip_with(k, **opts) { |gz| gz.write("é", "\u3042", "abc") }).b }
        expect(data[1]).to eq(data[0]), opts.inspect
      end
      zlib = gunzip(gzip_with(Zlib::GzipWriter, encoding: "ISO-8859-1:UTF-8") { |gz| gz.write("é") })
      expect(zlib.b).to eq("\xE9".b)
    end

    it "takes a trailing Hash as options only when more than one argument is given" do
      expect(outcome { ours.new(StringIO.new, nil, nil, {}).level })
        .to eq(outcome { Zlib::GzipWriter.new(StringIO.new, nil, nil, {}).level })
    end
  end
end
