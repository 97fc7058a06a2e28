# frozen_string_literal: true

require_relative "../../support/helpers/gzip_writer"

# ThriftNative::GzipWriter against Zlib::GzipWriter: #path, .wrap and .open.
RSpec.describe ThriftNative::GzipWriter do
  include GzipWriterHelpers

  describe "#path" do
    it "is defined only when io responds to path, and still works after close" do
      Tempfile.create("gzw") do |t|
        gz = ours.new(t)
        gz.print("foo")
        expect(gz.path).to eq(t.path)
        gz.close
        expect(gz.path).to eq(t.path)
      end
      both.each do |k|
        gz = k.new(StringIO.new)
        expect { gz.path }.to raise_error(NoMethodError)
        gz.close
      end
    end

    it "is not defined when io.path raises IOError" do
      io = StringIO.new
      def io.path = raise(IOError, "no path")
      expect(outcome { ours.new(io).path }.first).to eq(outcome { Zlib::GzipWriter.new(io).path }.first)
    end
  end

  describe ".wrap" do
    it "yields, closes the writer and io, and returns the block's value (upstream test_writer_wrap)" do
      Tempfile.create("gzw") do |t|
        t.binmode
        expect(ours.wrap(t) { |gz| gz.print("foo") || :value }).to eq(:value)
        expect(t.closed?).to be(true)
        expect(Zlib::GzipReader.open(t.path, &:read)).to eq("foo")
      end
    end

    it "logs the same io calls as Zlib" do
      logs = both.map do |k|
        rec = RecordingIO.new
        k.wrap(rec) { |g| g.write("w") }
        rec.kinds
      end
      expect(logs[1]).to eq(logs[0])
    end

    it "returns the writer without a block; a double close is fine (upstream test_double_close)" do
      Tempfile.create("gzw") do |t|
        t.binmode
        w = ours.wrap(t)
        expect(w).to be_a(ours)
        expect { w.close }.not_to raise_error
        expect(w.close).to be_nil
      end
    end

    it "does not close io after finish in the block" do
      both.each do |k|
        rec = RecordingIO.new
        k.wrap(rec, &:finish)
        expect(rec.kinds).not_to include(:close)
      end
    end

    it "closes even when the block raises, producing a complete stream" do
      io = StringIO.new("".b)
      expect { ours.wrap(io) { |gz| gz.write("partial") && raise("boom") } }.to raise_error(RuntimeError, "boom")
      expect(gunzip(io.string)).to eq("partial")
    end
  end

  describe ".open" do
    it "needs a filename (upstream test_open)" do
      expect(outcome { ours.open }).to eq(outcome { Zlib::GzipWriter.open })
    end

    it "writes a file with or without a block, for a String or a Pathname (upstream test_open)" do
      Tempfile.create("gzw") do |t|
        t.close
        expect(ours.open(t.path) { |gz| gz.print("foo") || 7 }).to eq(7)
        expect(Zlib::GzipReader.open(t.path, &:read)).to eq("foo")
        f = ours.open(Pathname(t.path))
        expect(f.to_io).to be_a(File)
        expect(f.to_io.binmode?).to be(true)
        begin
          f.print("bar")
        ensure
          f.close
        end
        expect(Zlib::GzipReader.open(t.path, &:read)).to eq("bar")
        expect(gunzip_with_command(File.binread(t.path))).to eq("bar")
      end
    end

    it "raises Zlib::StreamError for a bad level and closes the file (upstream test_open)" do
      Tempfile.create("gzw") do |t|
        t.close
        opened = []
        allow(File).to receive(:open).and_wrap_original { |m, *a| m.call(*a).tap { |f| opened << f } }
        expect(outcome { ours.open(t.path, 10000) }).to eq(outcome { Zlib::GzipWriter.open(t.path, 10000) })
        expect(opened.first.closed?).to be(true)
      end
    end

    it "still produces a complete file when the block raises" do
      Tempfile.create("gzw") do |t|
        t.close
        expect { ours.open(t.path) { |gz| gz.write("abc") && raise("x") } }.to raise_error("x")
        expect(Zlib::GzipReader.open(t.path, &:read)).to eq("abc")
      end
    end
  end
end
