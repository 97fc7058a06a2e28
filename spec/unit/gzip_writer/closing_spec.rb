# frozen_string_literal: true

require_relative "../../support/helpers/gzip_writer"

# ThriftNative::GzipWriter against Zlib::GzipWriter: #close, #finish, #closed? and #to_io, and what a closed
# writer answers.
RSpec.describe ThriftNative::GzipWriter do
  include GzipWriterHelpers

  describe "#close, #finish, #closed?, #to_io" do
    it "close returns io, closes it when it can, and a second close returns nil" do
      results = both.map do |k|
        rec = RecordingIO.new
        gz = k.new(rec)
        gz.write("x")
        [gz.close.equal?(rec), gz.closed?, gz.close, rec.kinds]
      end
      expect(results[1]).to eq(results[0])
      expect(results[1].first(3)).to eq([true, true, nil])
    end

    it "close works with an io that has write but no close" do
      io = CountingIO.new
      expect(ours.new(io).close).to equal(io)
    end

    it "finish returns io without closing it; close after finish is nil; finish twice raises" do
      results = both.map do |k|
        rec = RecordingIO.new
        gz = k.new(rec)
        gz.write("x")
        [gz.finish.equal?(rec), rec.kinds.include?(:close), gz.closed?, gz.close, outcome { gz.finish }]
      end
      expect(results[1]).to eq(results[0])
    end

    it "closed? is true for new(nil) and false while open" do
      both.each do |k|
        expect(k.new(nil).closed?).to be(true)
        expect(k.new(StringIO.new).closed?).to be(false)
      end
      io = StringIO.new
      expect(ours.new(io).to_io).to equal(io)
    end

    it "writes a 20-byte empty stream identical to Zlib's" do
      streams = both.map { |k| gzip_with(k) { nil } }
      expect(streams[1]).to eq(streams[0])
      expect(streams[1].bytesize).to eq(20)
      expect_decodes(streams[1], "")
    end

    it "raises closed gzip stream from every method but close/closed?/path after close or finish" do
      calls = { write: ["x"], :<< => ["x"], print: ["x"], puts: ["x"], printf: ["%d", 1], putc: ["x"], flush: [],
                pos: [], tell: [], crc: [], mtime: [], :mtime= => [1], sync: [], :sync= => [true], to_io: [],
                level: [], os_code: [], finish: [], orig_name: [], :orig_name= => ["n"], comment: [],
                :comment= => ["c"] }
      %i[close finish].each do |ender|
        calls.each do |name, args|
          results = both.map do |k|
            gz = k.new(StringIO.new)
            gz.public_send(ender)
            [outcome { gz.public_send(name, *args) }, outcome { gz.close }, gz.closed?]
          end
          expect(results[1]).to eq(results[0]), "#{ender} then #{name}"
          expect(results[1][0]).to eq([Zlib::GzipFile::Error, "closed gzip stream"])
        end
      end
    end

    it "leaves an unclosed writer to GC without writing anything more (no finalizer)" do
      rec = RecordingIO.new
      ours.new(rec).write("lost")
      GC.start
      expect(rec.calls).to eq([[:write, 10]])
    end
  end
end
