# frozen_string_literal: true

[Thrift::BinaryProtocolAccelerated, Thrift::CompactProtocol].each do |protocol_class|
  RSpec.describe "GC safety of #{protocol_class}" do
    let(:klass) { protocol_class }

    def exercise(count = 200)
      trans = Thrift::MemoryBufferTransport.new
      prot = klass.new(trans)
      count.times do |i|
        prot.write_i32(i)
        prot.write_string("str#{i}" * (i % 7))
        prot.write_binary("\x00bin".b * (i % 5))
        prot.write_uuid(format("%08x-0000-4000-8000-%012x", i, i))
        prot.write_double(i / 3.0)
      end
      count.times.map { [prot.read_i32, prot.read_string, prot.read_binary, prot.read_uuid, prot.read_double] }
    end

    def expected(count = 200)
      count.times.map do |i|
        ["str#{i}" * (i % 7), "\x00bin".b * (i % 5)].then do |s, b|
          [i, s, b, format("%08x-0000-4000-8000-%012x", i, i), i / 3.0]
        end
      end
    end

    it "survives GC.compact and verify_compaction_references with cached classes and learnt ivar slots" do
      exercise
      GC.compact
      RubyFacts.verify_compaction
      expect(exercise).to eq(expected)
      expect(ThriftNative.active?).to be(true)
    end

    it "survives GC.stress" do
      GC.stress = GcStress.setting
      result = exercise(30)
      GC.stress = false
      expect(result).to eq(expected(30))
    ensure
      GC.stress = false
    end

    it "reads correctly when compaction moves the buffer between calls" do
      trans = Thrift::MemoryBufferTransport.new
      prot = klass.new(trans)
      50.times { |i| prot.write_i64(i * 1_000_003) }
      got = 50.times.map { |i| GC.compact if (i % 10).zero?; prot.read_i64 }
      expect(got).to eq(50.times.map { |i| i * 1_000_003 })
    end

    it "works with one protocol and transport per thread" do
      threads = 8.times.map do |t|
        Thread.new do
          trans = Thrift::MemoryBufferTransport.new
          prot = klass.new(trans)
          2000.times.map do |i|
            prot.write_i32(t * 10_000 + i)
            prot.write_string("t#{t}")
            [prot.read_i32, prot.read_string]
          end
        end
      end
      threads.each_with_index do |th, t|
        expect(th.value).to eq(2000.times.map { |i| [t * 10_000 + i, "t#{t}"] })
      end
    end
  end
end
