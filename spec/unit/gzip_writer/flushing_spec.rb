# frozen_string_literal: true

require_relative "../../support/helpers/gzip_writer"

# ThriftNative::GzipWriter against Zlib::GzipWriter: #flush with every mode, and sync mode.
RSpec.describe ThriftNative::GzipWriter do
  include GzipWriterHelpers

  describe "#flush" do
    it "returns self, sync-flushes pending data and always calls io.flush" do
      logs = both.map do |k|
        rec = RecordingIO.new
        gz = k.new(rec)
        gz.write("a")
        expect(gz.flush).to equal(gz)
        gz.flush(Zlib::NO_FLUSH)
        gz.write("b")
        gz.flush(Zlib::FULL_FLUSH)
        gz.close
        [rec.kinds, gunzip(rec.data)]
      end
      expect(logs[1]).to eq(logs[0])
      expect(logs[1][1]).to eq("ab")
    end

    it "makes the data so far readable (sync flush)" do
      rec = RecordingIO.new
      gz = ours.new(rec)
      gz.write("hello ")
      gz.flush
      inflater = Zlib::Inflate.new(-Zlib::MAX_WBITS)
      expect(inflater.inflate(rec.data.byteslice(10..))).to eq("hello ")
      gz.close
    end

    it "raises Zlib::BufError on a repeated flush, and after a sync-mode write" do
      results = both.map do |k|
        gz = k.new(StringIO.new)
        gz.write("a")
        gz.flush
        r1 = outcome { gz.flush }
        gz.sync = true
        gz.write("b")
        r2 = outcome { gz.flush }
        r3 = outcome { gz.write("") }
        r4 = outcome { gz.write("c") && gz.pos }
        [r1, r2, r3, r4, outcome { gz.close && :closed }]
      end
      expect(results[1]).to eq(results[0])
      expect(results[1][0]).to eq([Zlib::BufError, "buffer error"])
    end

    it "raises for an invalid mode like Zlib" do
      [99, -1, :sym, "2", 2.5].each do |mode|
        results = both.map do |k|
          gz = k.new(StringIO.new)
          gz.write("a")
          [outcome { gz.flush(mode) && :ok }, outcome { gz.close && :closed }.first]
        end
        expect(results[1]).to eq(results[0]), mode.inspect
      end
    end

    it "after flush(FINISH): write raises StreamError and close BufError, like Zlib" do
      results = both.map do |k|
        gz = k.new(StringIO.new)
        gz.write("a")
        gz.flush(Zlib::FINISH)
        [outcome { gz.write("b") }, outcome { gz.close }, gz.closed?, outcome { gz.write("c") }]
      end
      expect(results[1]).to eq(results[0])
      expect(results[1][0].first).to eq(Zlib::StreamError)
      expect(results[1][1].first).to eq(Zlib::BufError)
    end

    it "after flush(FINISH): further flushes and empty writes answer as Zlib's" do
      [-> { _1.flush }, -> { _1.flush(Zlib::FINISH) }, -> { _1.flush(Zlib::NO_FLUSH) }, -> { _1.write("") },
       -> { _1.sync = true; _1.write("") }, -> { _1.finish.class }].each_with_index do |op, i|
        results = both.map do |k|
          gz = k.new(StringIO.new)
          gz.write("a")
          gz.flush(Zlib::FINISH)
          [outcome { op.call(gz) && :ok }, outcome { gz.close.class }]
        end
        expect(results[1]).to eq(results[0]), "op #{i}"
      end
    end

    it "before the first write still yields a valid stream (deliberate fix of Zlib's header-less output)" do
      data = gzip_with(ours) do |gz|
        gz.flush
        gz.write("hi")
      end
      expect_decodes(data, "hi")
      zlib_data = gzip_with(Zlib::GzipWriter) { |gz| gz.flush && gz.write("hi") }
      expect { gunzip(zlib_data) }.to raise_error(Zlib::GzipFile::Error)
    end
  end

  describe "#sync" do
    it "flushes every write and calls io.flush after each io.write, like Zlib" do
      logs = both.map do |k|
        rec = RecordingIO.new
        gz = k.new(rec)
        expect(gz.sync).to be(false)
        expect(gz.sync = 1).to eq(1)
        expect(gz.sync).to be(true)
        gz.write("abc")
        gz.write("def")
        gz.flush(Zlib::FULL_FLUSH)
        gz.close
        [rec.kinds, gunzip(rec.data)]
      end
      expect(logs[1]).to eq(logs[0])
    end

    it "makes every write readable on its own" do
      rec = RecordingIO.new
      gz = ours.new(rec)
      gz.sync = true
      gz.write("first")
      inflater = Zlib::Inflate.new(-Zlib::MAX_WBITS)
      expect(inflater.inflate(rec.data.byteslice(10..))).to eq("first")
      gz.close
    end
  end
end
