# frozen_string_literal: true

# Thrift::JsonProtocol struct reads: Struct#read and Union#read through an exact JsonProtocol over a
# MemoryBufferTransport are read natively (ext/thrift_native/src/struct_codec/json/read.rs, the steps in
# ext/thrift_native_core/src/json/read.rs), every step the native reader declines by the protocol's Ruby methods.
# Compared with the C accelerator's struct code (which calls the same Ruby methods for every step) and with our
# dispatch path (a JsonProtocol subclass), on valid documents and on mutated ones: the same values (encodings
# included), the same exceptions, the same bytes left in the transport and the same protocol state (the reader's held
# byte, the contexts with their flags). JSON_MUTATIONS sets the number of mutated documents (bin/stress raises it).
module JsonRead
  RUNNER = File.expand_path("../support/runners/json_read_runner.rb", __dir__)
  MUTATIONS = Integer(ENV.fetch("JSON_MUTATIONS", "1500"))

  # Replacements for a number: what Integer() and Float() read their own ways, or refuse.
  NUMBERS = %w[0 -0 +5 017 08 00 1e3 1.0 .5 5. 1E+3 99999999999999999999 -9223372036854775808 2147483648 -1
               1_000 0x1f 1e400 1e-320 2.5 -2.5e-3 NaN].freeze
  # Replacements for a string's content: escapes of every kind, raw and escaped non-ASCII text, bad escapes.
  TEXTS = ['\u00e9', "é", '\u00e9é', 'é\u00e9', '\uD83D\uDE00', '\ud83d\uDe00', '\uD83D', '\uDE00', '\u12G4',
           '\u 123', '\u0x12', '\u-123', "\xff".b, '\x', '\\', '\/', '\b\f\n\r\t', "\x01", 'YQ', 'YQ=', 'YR',
           'Y', 'YQ==YQ==', '+/8', '-_8', "NaN", "Infinity", "-Infinity", "1.5", " 1.5", "0x10", "1_0", "tf", "wat",
           "uid", "rec", "lst", "00112233-4455-6677-8899-AABBCCDDEEFF"].map(&:b).freeze
  ALPHABET = "{}[]:,\"\\u0123456789eE.+- tfNaIy".b.chars.freeze
end

RSpec.describe "JsonProtocol struct reads, differentially" do
  def token_spans(bytes, pattern)
    spans = []
    bytes.scan(pattern) { spans << Regexp.last_match.offset(0) }
    spans
  end

  # One mutation of a JSON document: a byte changed, dropped, doubled or inserted, the document cut, a number or a
  # string's content replaced by one that reads differently.
  def mutate(bytes, r)
    m = bytes.dup
    i = r.rand(m.bytesize)
    case r.rand(7)
    when 0 then m.setbyte(i, JsonRead::ALPHABET.sample(random: r).ord)
    when 1 then m.slice!(i)
    when 2 then m.insert(i, m.byteslice(i))
    when 3 then m = m.byteslice(0, i)
    when 4 then m.insert(i, JsonRead::ALPHABET.sample(random: r))
    when 5
      spans = token_spans(m, /-?[0-9][0-9.eE+-]*/n)
      from, to = spans.sample(random: r) || [i, i]
      m[from...to] = JsonRead::NUMBERS.sample(random: r).b
    else
      spans = token_spans(m, /"[^"\\]*"/n)
      from, to = spans.sample(random: r) || [i, i + 1]
      m[(from + 1)...(to - 1)] = JsonRead::TEXTS.sample(random: r) if to - from >= 2
    end
    m
  end

  # Everything structs as the JsonProtocol writes them, each also in a list and in a map with the protocol's own
  # headers around it.
  def documents(seed, count)
    StructRuns.run("ours", "json", "write", seed, count).flat_map do |doc|
      [["top", doc], ["list", %(["rec",2,#{doc},#{doc}]).b], ["map", %(["str","rec",1,{"k":#{doc}}]).b]]
    end
  end

  def read_all(accelerator, inputs, *args, env: {}, transport: "memory")
    env = env.merge("TRANSPORT" => transport)
    ChildRuby.marshal(JsonRead::RUNNER, accelerator, *args, input: inputs, env: env)
  end

  def expect_same(inputs, ours, other, label)
    expect(ours.size).to eq(inputs.size)
    inputs.zip(ours, other).each do |(shape, bytes), mine, theirs|
      expect(mine).to eq(theirs), "#{label}, #{shape} #{bytes.inspect[0, 400]}:\n ours #{mine.inspect[0, 600]}\n " \
                                  "them #{theirs.inspect[0, 600]}"
    end
  end

  it "reads valid documents to the C accelerator's values, leaving the protocol as its Ruby methods do" do
    inputs = documents(21, 12)
    ours = read_all("ours", inputs)
    expect_same(inputs, ours, read_all("c", inputs), "C accelerator")
    expect_same(inputs, ours, read_all("ours", inputs, "dispatch"), "dispatch path")
    # Every document read whole, nothing left behind, no byte held.
    expect(ours.map { |outcomes, _| outcomes.last }).to all(start_with("<CodecTest::Everything"))
    expect(ours.map { |_, state| [state[0], state[2]] }).to all(eq([0, nil]))
  end

  it "reads through a FramedTransport (a document in frames of any size) and a BufferedTransport as the library does" do
    valid = documents(28, 6)
    r = Random.new(29)
    inputs = valid + Array.new(JsonRead::MUTATIONS / 5) { valid.sample(random: r).then { |s, d| [s, mutate(d, r)] } }
    %w[framed buffered].each do |transport|
      ours = read_all("ours", inputs, transport: transport)
      expect_same(inputs, ours, read_all("c", inputs, transport: transport), "C accelerator, #{transport}")
      expect(ours.first(valid.size).map { |outcomes, _| outcomes.last }).to all(start_with("<CodecTest::Everything"))
    end
  end

  it "reads #{JsonRead::MUTATIONS} mutated documents as the C accelerator does, values, exceptions and state" do
    valid = documents(22, 10)
    r = Random.new(23)
    inputs = Array.new(JsonRead::MUTATIONS) do
      shape, doc = valid.sample(random: r)
      m = mutate(doc, r)
      m = mutate(m, r) if r.rand(4).zero?
      [shape, m]
    end
    ours = read_all("ours", inputs)
    expect_same(inputs, ours, read_all("c", inputs), "C accelerator")
    expect_same(inputs, ours, read_all("ours", inputs, "dispatch"), "dispatch path")
    # The mutations reach what they are about: values read, errors of many kinds, documents read on past a step the
    # native reader declined.
    outcomes = ours.map { |o, _| o.last }
    errors = outcomes.select { |o| Outcome.error?(o) }.map { |o| Outcome.class_name(o) }.tally
    expect(outcomes.count { |o| !Outcome.error?(o) }).to be > JsonRead::MUTATIONS / 10
    expect(errors.keys).to include("Thrift::ProtocolException", "EOFError", "ArgumentError")
    expect(ours.count { |_, state| state[2] }).to be > 0 # a byte held after an error
  end

  # Thrift master reads strings its own way (always UTF-8, surrogate pairs joined, strict escapes), refuses negative
  # and oversized containers and names unknown types with ProtocolException: the same comparison with its library.
  it "reads mutated documents as thrift master's JsonProtocol does (THRIFT_MASTER_RB)" do
    master = ENV.fetch("THRIFT_MASTER_RB", "")
    skip "THRIFT_MASTER_RB (an apache/thrift checkout's lib/rb, its ext built) is not set" if master.empty?
    env = { "THRIFT_MASTER_RB" => master }
    valid = documents(26, 6)
    r = Random.new(27)
    inputs = valid + Array.new(JsonRead::MUTATIONS / 2) { valid.sample(random: r).then { |s, d| [s, mutate(d, r)] } }
    ours = read_all("ours-master", inputs, env: env)
    expect_same(inputs, ours, read_all("c-master", inputs, env: env), "thrift master's C accelerator")
  end

  it "gives the same outcomes under GC.stress" do
    valid = documents(24, 2)
    r = Random.new(25)
    inputs = valid + Array.new(30) { valid.sample(random: r).then { |s, d| [s, mutate(d, r)] } }
    stressed = read_all("ours", inputs, env: { "GC_STRESS" => "1" })
    expect_same(inputs, stressed, read_all("c", inputs), "C accelerator")
  end
end
