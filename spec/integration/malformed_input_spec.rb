# frozen_string_literal: true

require_relative "../../test_support/codec_types"
CodecTypes.load!

# Deterministic mutations of valid struct payloads (bit flips, overwritten bytes, truncation, inflated lengths and
# container sizes, inserted bytes), decoded by thrift_native and by the loaded thrift's C accelerator (Debian's
# thrift 0.14 by default), each in its own child process: never a crash, the same outcome (the same value, or the same
# exception, message and type), and memory bounded by the input. MALFORMED_MUTATIONS sets the number of mutations per protocol
# (bin/stress raises it).
#
# thrift_native decodes as the loaded thrift's own C accelerator does, exceptions and messages included, but for the
# refusals it keeps on every version (SpecSupport::SAFE_REFUSALS).
module Malformed
  MUTATIONS = Integer(ENV.fetch("MALFORMED_MUTATIONS", "1000"))
  HUGE = 0x7fff_ffff
end

RSpec.describe "Malformed input" do

  def varint(n)
    bytes = []
    loop do
      byte = n & 0x7f
      n >>= 7
      break bytes << byte if n.zero?

      bytes << (byte | 0x80)
    end
    bytes.pack("C*")
  end

  # A size the wire can carry, written over the bytes at `i`: 4 big-endian bytes (binary) or a varint replacing one
  # byte (compact), so that whatever length, size or id was there is inflated or made negative or over-long.
  def inflate(protocol, bytes, i, r)
    m = bytes.dup
    if protocol == "binary"
      i = [i, m.bytesize - 4].min.clamp(0..)
      m[i, 4] = [[Malformed::HUGE, 0x8000_0000, 0xffff_ffff, 0x1000_0000, 0x7fff_0000].sample(random: r)].pack("N")
    else
      m[i, 1] = [varint(Malformed::HUGE), varint(0xffff_ffff), varint(2**40), "\xff".b * 11, varint(0x1000_0000)].sample(random: r)
    end
    m
  end

  def mutate(protocol, bytes, r)
    i = r.rand(bytes.bytesize)
    case r.rand(6)
    when 0 then [:bit_flip, bytes.dup.tap { |m| m.setbyte(i, m.getbyte(i) ^ (1 << r.rand(8))) }]
    when 1 then [:overwrite, bytes.dup.tap { |m| m.setbyte(i, r.rand(256)) }]
    when 2 then [:truncate, bytes.byteslice(0, i)]
    when 3 then [:inflate, inflate(protocol, bytes, i, r)]
    when 4 then [:insert, bytes.dup.tap { |m| m.insert(i, r.bytes(r.rand(1..4))) }]
    else [:two_overwrites, bytes.dup.tap { |m| 2.times { m.setbyte(r.rand(m.bytesize), r.rand(256)) } }]
    end
  end

  # Compares one outcome of ours with the C accelerator's: :same_value, :same_error (class, message and type), or
  # :safe_refusal; anything else fails the example.
  def verdict(ours, c, input)
    return (Outcome.error?(ours) ? :same_error : :same_value) if ours == c
    return :safe_refusal if SpecSupport.safe_refusal?(ours, c)

    expect(ours).to eq(c), "input #{input.unpack1("H*")}: ours #{ours.inspect[0, 300]} vs C #{c.inspect[0, 300]}"
  end

  %w[binary compact].each do |protocol|
    context "with the #{protocol} protocol" do
      it "decodes #{Malformed::MUTATIONS} mutated payloads like the C accelerator, on both paths, without crashing" do
        valid = StructRuns.run("ours", protocol, "write", 606, 20)
        r = Random.new(protocol == "binary" ? 11 : 12)
        kinds, mutated = Array.new(Malformed::MUTATIONS) { mutate(protocol, valid[r.rand(valid.size)], r) }.transpose
        ours = StructRuns.run("ours", protocol, "read", "Everything", input: mutated)
        c = StructRuns.run("c", protocol, "read", "Everything", input: mutated)
        expect(ours.size).to eq(Malformed::MUTATIONS)
        # The dispatch path (a protocol subclass) gives exactly the fast path's outcomes, messages included.
        ours_dispatch = StructRuns.run("ours", protocol, "read", "Everything", input: mutated, dispatch: true)
        ours.zip(ours_dispatch, mutated).each do |fast, slow, input|
          expect(slow).to eq(fast), "input #{input.unpack1("H*")}: fast #{fast.inspect[0, 300]} vs dispatch #{slow.inspect[0, 300]}"
        end

        verdicts = ours.zip(c, mutated).map { |o, cc, input| verdict(o, cc, input) }
        tally = verdicts.tally
        if ENV["MALFORMED_VERBOSE"]
          warn "  #{protocol}: #{Malformed::MUTATIONS} mutations #{kinds.tally} -> #{tally}"
          documented = ours.zip(c).select { |o, cc| SpecSupport.safe_refusal?(o, cc) }
                           .map { |o, cc| [Outcome.message(o), Outcome.error?(cc) ? Outcome.message(cc) : "value"] }
          warn "  documented differences (ours, C): #{documented.tally.sort_by { -_2 }.first(12)}"
        end
        # The mix exercises both outcomes, and the safe refusals stay a minority.
        expect(tally[:same_value]).to be > Malformed::MUTATIONS / 20
        expect(tally[:same_error]).to be > Malformed::MUTATIONS / 4
        expect(tally.fetch(:safe_refusal, 0)).to be < Malformed::MUTATIONS / 10
        expect(kinds.uniq.size).to eq(6)
      end
    end
  end

  # Payloads that declare a 2 GB string or a 2^31-1 element container with a handful of bytes behind it.
  def huge_declarations(protocol)
    n = [Malformed::HUGE].pack("N")
    if protocol == "binary"
      {
        "Scalars" => [
          "\x0b\x00\x07".b + n + "abc",                               # a_string
          "\x0b\x00\x08".b + n + "abc",                               # a_binary
          "\x0b\x00\x63".b + n + "abc"                                # unknown string field, skipped
        ],
        "Containers" => [
          "\x0f\x00\x04\x08".b + n + "\x00\x00\x00\x01".b,            # list<i32>
          "\x0f\x00\x07\x0b".b + n + "\x00\x00\x00\x01a".b,           # list<string>
          "\x0e\x00\x0a\x08".b + n + "\x00\x00\x00\x01".b,            # set<i32>
          "\x0d\x00\x0c\x0b\x08".b + n + "\x00\x00\x00\x01a".b,       # map<string, i32>
          "\x0f\x00\x0f\x0f".b + n + "\x0b".b + n + "\x00\x00\x00\x01a".b * 3, # list<list<string>>
          "\x0f\x00\x63\x08".b + n + "\x00\x00\x00\x01".b             # unknown list field, skipped
        ]
      }
    else
      v = varint(Malformed::HUGE)
      {
        "Scalars" => ["\x78".b + v + "abc", "\x88".b + v + "abc", "\x08\xc6\x01".b + v + "abc"],
        "Containers" => [
          "\x49\xf5".b + v + "\x02".b,                                # list<i32>
          "\x79\xf8".b + v + "\x01a".b,                               # list<string>
          "\xaa\xf5".b + v + "\x02".b,                                # set<i32>
          "\x0b\x18".b + v + "\x85\x01a\x02".b,                       # map<string, i32> (field 12 by id)
          "\x09\x1e\xf9".b + v + "\xf8".b + v + "\x01a".b * 3,          # list<list<string>> (field 15 by id)
          "\x09\xc6\x01\xf5".b + v + "\x02".b                         # unknown list field (99), skipped
        ]
      }
    end
  end

  %w[binary compact].each do |protocol|
    it "keeps memory bounded by the input when a #{protocol} payload declares 2 GB strings and containers" do
      huge_declarations(protocol).each do |klass, inputs|
        ours, rss_kb, vm_kb = StructRuns.run("ours", protocol, "read-rss", klass, input: inputs)
        c = StructRuns.run("c", protocol, "read", klass, input: inputs)
        ours.zip(c, inputs).each do |o, cc, input|
          expect(Outcome.error?(o)).to be(true), "#{klass} #{input.unpack1("H*")} decoded: #{o}"
          verdict(o, cc, input)
        end
        expect(ours.map { |o| Outcome.class_name(o) }.uniq).to all(eq("EOFError").or(eq("Thrift::TransportException")))
        expect(rss_kb).to be < 20_000, "#{klass}: peak RSS grew by #{rss_kb} kB"
        expect(vm_kb).to be < 200_000, "#{klass}: peak address space grew by #{vm_kb} kB"
      end
    end
  end

  # Frames: a 4-byte size, then the struct. Mutations fall on the size too.
  [%w[binary framed], %w[compact framed], %w[binary framed-pipe], %w[compact buffered]].each do |protocol, transport|
    it "decodes mutated #{protocol} payloads over #{transport} like the C accelerator, on both paths" do
      valid = StructRuns.run("ours", protocol, "write", 808, 10, transport: transport)
      r = Random.new(13)
      mutated = Array.new(Malformed::MUTATIONS / 4) { mutate(protocol, valid[r.rand(valid.size)], r).last }
      ours = StructRuns.run("ours", protocol, "read", "Everything", input: mutated, transport: transport)
      c = StructRuns.run("c", protocol, "read", "Everything", input: mutated, transport: transport)
      dispatch = StructRuns.run("ours", protocol, "read", "Everything", input: mutated, transport: transport, dispatch: true)
      expect(dispatch).to eq(ours)
      tally = ours.zip(c, mutated).map { |o, cc, input| verdict(o, cc, input) }.tally
      expect(tally[:same_value]).to be > mutated.size / 20
      expect(tally[:same_error]).to be > mutated.size / 4
    end
  end

  # The Ruby library reads a frame with one `read_all(size)`; on a socket, IO#readpartial reserves `size` bytes up
  # front (2 GiB of address space for the first case, measured). thrift_native reads in 1 MiB steps: the same error,
  # no reservation ahead of the bytes received.
  it "keeps memory bounded when a frame on a socket declares up to 4 GB" do
    leaf = "\x08\x00\x01\x00\x00\x00\x05\x00".b
    inputs = [[leaf.bytesize].pack("N") + leaf] + [0x7fff_ffff, 0xffff_ffff, 0x4000_0000].map { |n| [n].pack("N") + leaf }
    ours, rss_kb, vm_kb = StructRuns.run("ours", "binary", "read-rss", "Leaf", input: inputs, transport: "framed-socket")
    c = StructRuns.run("c", "binary", "read", "Leaf", input: inputs, transport: "framed-socket")
    expect(ours).to eq(c)
    expect(ours.first).to be_a(String)
    expect(ours.drop(1)).to all(eq(["Thrift::TransportException", "end of file reached", Thrift::TransportException::NOT_OPEN]))
    expect(rss_kb).to be < 20_000
    expect(vm_kb).to be < 200_000, "peak address space grew by #{vm_kb} kB"
  end

  # Through thrift master's HeaderProtocol (THRIFT_MASTER_RB): mutations fall on the frame size, the header block
  # (varints, info headers, transform ids) and the payload; the same outcomes as master's C accelerator, whose struct
  # code calls HeaderProtocol's methods for every value.
  %w[binary compact].product(%w[header header-zlib]).each do |protocol, transport|
    it "decodes mutated #{protocol} payloads through HeaderProtocol over #{transport} as master's C accelerator does" do
      skip "THRIFT_MASTER_RB is not set" if ENV.fetch("THRIFT_MASTER_RB", "").empty?
      valid = StructRuns.run("c-master", protocol, "write", 808, 10, transport: transport)
      r = Random.new(14)
      mutated = Array.new(Malformed::MUTATIONS / 4) { mutate(protocol, valid[r.rand(valid.size)], r).last }
      ours = StructRuns.run("ours-master", protocol, "read", "Everything", input: mutated, transport: transport)
      c = StructRuns.run("c-master", protocol, "read", "Everything", input: mutated, transport: transport)
      expect(ours).to eq(c)
      expect(StructRuns.run("ours-master", protocol, "read", "Everything", input: mutated, transport: transport, dispatch: true)).to eq(ours)
      # A damaged ZLIB payload seldom inflates at all.
      expect(ours.count { |o| !Outcome.error?(o) }).to be > (transport == "header-zlib" ? 0 : mutated.size / 20)
      expect(ours.count { |o| Outcome.error?(o) }).to be > mutated.size / 4
    end
  end

  # HeaderTransport asks for a whole frame in one read_all too (master limits frames to 1 GiB by default).
  it "keeps memory bounded when a header frame on a socket declares up to 1 GiB" do
    skip "THRIFT_MASTER_RB is not set" if ENV.fetch("THRIFT_MASTER_RB", "").empty?
    require_relative "../support/fixtures/header_frames"
    leaf = "\x08\x00\x01\x00\x00\x00\x05\x00".b
    frame = HeaderFrames.header(leaf)
    inputs = [frame] + [0x3fff_ffff, 0x2000_0000, 0x4000_0000].map { |n| [n].pack("N") + frame[4..] }
    ours, rss_kb, vm_kb = StructRuns.run("ours-master", "binary", "read-rss", "Leaf", input: inputs, transport: "header-socket")
    c = StructRuns.run("c-master", "binary", "read", "Leaf", input: inputs, transport: "header-socket")
    expect(ours).to eq(c)
    expect(ours.first).to be_a(String)
    expect(Outcome.class_name(ours[1])).to eq("Thrift::TransportException")
    expect(Outcome.message(ours.last)).to eq("Frame size 1073741824 exceeds maximum 1073741823")
    expect(rss_kb).to be < 20_000
    expect(vm_kb).to be < 200_000, "peak address space grew by #{vm_kb} kB"
  end

  # 200,000 levels: ours stops known struct nesting at Thrift::DEFAULT_RECURSION_DEPTH (master; 0.14's C accelerator
  # recurses until Ruby's stack check raises SystemStackError). Unknown nested values go through the thrift
  # library's BaseProtocol#skip, as with the C accelerator: before thrift master it has no depth limit
  # (SystemStackError), master's stops at its max_depth argument (64). Either way the process survives (in-process
  # here, with thrift_native loaded).
  skip_limited = Thrift::BaseProtocol.instance_method(:skip).arity != 1
  deep_skip = skip_limited ? [Thrift::ProtocolException, "Maximum skip depth exceeded"] : [SystemStackError]
  [["binary", Thrift::BinaryProtocolAccelerated, "\x0c\x00\x06", "\x0c\x00\x63", "\x0f\x00\x63", "\x0f\x00\x00\x00\x01",
    "\x08\x00\x01\x00\x00\x00\x05\x00"],
   ["compact", Thrift::CompactProtocol, "\x6c", "\x0c\xc6\x01", "\x09\xc6\x01", "\x19", "\x15\x0a\x00"]].each do |name, klass, child, unknown, list, inner, leaf|
    it "survives 200,000 levels of nesting in a #{name} payload" do
      prot = ->(bytes) { klass.new(Thrift::MemoryBufferTransport.new(bytes.b)) }
      decode = ->(bytes) { CodecTest::Everything.new.read(prot.call(bytes)) }
      n = 200_000
      expect { decode.call(child.b * n) }.to raise_error(Thrift::ProtocolException, "Maximum recursion depth exceeded") { |e|
        expect(e.type).to eq(Thrift::ProtocolException::DEPTH_LIMIT)
      }
      expect { decode.call(unknown.b * n) }.to raise_error(*deep_skip)
      expect { decode.call(list.b + (inner.b * n)) }.to raise_error(*deep_skip)
      expect(CodecTest::Leaf.new.tap { |l| l.read(prot.call(leaf)) }).to eq(CodecTest::Leaf.new(id: 5)) # and decoding goes on
    end
  end

  # A MemoryBufferTransport whose @buf or @index was overwritten: errors, never a crash (Debian's 0.14 C accelerator
  # segfaults on a nil @buf in Struct#read).
  {
    "a nil @buf" => [:@buf, nil, TypeError, "no implicit conversion of nil into String"],
    "an Integer @buf" => [:@buf, 42, TypeError, "no implicit conversion of Integer into String"],
    "an @index past the end" => [:@index, 10**6, EOFError, "Not enough bytes remain in memory buffer"],
    "a negative @index" => [:@index, -3, EOFError, "Not enough bytes remain in memory buffer"],
    "a Bignum @index" => [:@index, 2**70, RangeError, RubyFacts.long_long_range_message],
    "a nil @index" => [:@index, nil, TypeError, "no implicit conversion of nil into Integer"]
  }.each do |what, (ivar, value, error, message)|
    it "raises #{error} for #{what}, in Struct#read and in read_i32, with both protocols" do
      [Thrift::BinaryProtocolAccelerated, Thrift::CompactProtocol].each do |klass|
        trans = Thrift::MemoryBufferTransport.new
        CodecTest::Leaf.new(id: 5, label: "abc").write(klass.new(trans))
        bytes = trans.read(trans.available)
        [->(p) { CodecTest::Leaf.new.read(p) }, ->(p) { p.read_i32 }].each do |operation|
          trans = Thrift::MemoryBufferTransport.new(bytes.dup)
          trans.instance_variable_set(ivar, value)
          expect { operation.call(klass.new(trans)) }.to raise_error(error, message)
        end
      end
    end
  end
end
