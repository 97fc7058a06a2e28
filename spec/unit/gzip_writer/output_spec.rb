# frozen_string_literal: true

require_relative "../../support/helpers/gzip_writer"

# ThriftNative::GzipWriter's output: decoded by GzipReader and gzip -dc (every level, strategy and flush mode, two
# members, non-String arguments, one very large write), and as small as Zlib's.
RSpec.describe ThriftNative::GzipWriter do
  include GzipWriterHelpers

  describe "output" do
    let(:data) { text_corpus + pattern(70_000) + Random.new(7).bytes(50_000) }

    it "decodes with GzipReader and gzip -dc for levels -1..9 and every strategy" do
      [-1, *0..9].each do |level|
        [nil, Zlib::FILTERED, Zlib::HUFFMAN_ONLY, Zlib::RLE, Zlib::FIXED].each do |strategy|
          bytes = gzip_with(ours, level, strategy) { |gz| data.each_slice_bytes(7777) { |c| gz.write(c) } }
          expect(digest(gunzip_with_reader(bytes))).to eq(digest(data)), [level, strategy].inspect
        end
        expect(digest(gunzip_with_command(gzip_with(ours, level) { |gz| gz.write(data) }))).to eq(digest(data))
      end
    end

    it "strategies change the output the way zlib's do" do
      sizes = [nil, Zlib::HUFFMAN_ONLY].map { |s| gzip_with(ours, 6, s) { |gz| gz.write(text_corpus) }.bytesize }
      expect(sizes[1]).to be > sizes[0] * 2
    end

    it "decodes in sync mode and with every flush mode between writes" do
      [Zlib::NO_FLUSH, 1, Zlib::SYNC_FLUSH, Zlib::FULL_FLUSH].each do |mode|
        bytes = gzip_with(ours) do |gz|
          data.each_slice_bytes(30_000) do |c|
            gz.write(c)
            gz.flush(mode)
          end
        end
        expect_decodes(bytes, data)
      end
      bytes = gzip_with(ours) do |gz|
        gz.sync = true
        data.each_slice_bytes(10_000) { |c| gz.write(c) }
      end
      expect_decodes(bytes, data)
    end

    it "is as small as Zlib's within a few percent at the default level" do
      sizes = both.map { |k| gzip_with(k) { |gz| gz.write(text_corpus) }.bytesize }
      expect(sizes[1]).to be < sizes[0] * 1.05
    end

    it "two members one after the other decode as one (upstream test_gzip_reader_zcat)" do
      Tempfile.create("gzw") do |t|
        t.binmode
        gz = ours.new(t)
        gz.print("foo")
        gz.close
        File.open(t.path, "ab") { |f| ours.new(f).tap { |g| g.print("bar") }.close }
        results = []
        File.open(t.path, "rb") { |f| Zlib::GzipReader.zcat(f) { |s| results << s } }
        expect(results).to eq(%w[foo bar])
        expect(gunzip_with_command(File.binread(t.path))).to eq("foobar")
      end
    end

    it "decodes non-String arguments" do
      bytes = gzip_with(ours) { |gz| gz.write(1, 2.5, nil, :a, [1, 2], { k: 1 }) }
      expect_decodes(bytes, "12.5a[1, 2]#{{ k: 1 }}")
    end

    it "handles a single very large write (GVL released) and writes it in one io.write" do
      big = Random.new(3).bytes(3 * 1024 * 1024)
      rec = RecordingIO.new
      gz = ours.new(rec, 1)
      gz.write("")
      gz.write(big)
      expect(rec.calls.size).to eq(2)
      gz.close
      expect_decodes(rec.data, big)
    end
  end
end
