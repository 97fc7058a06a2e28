# frozen_string_literal: true

# Thrift::JsonProtocol, which is pure Ruby in every thrift and which no C accelerator covers: Struct#write and
# Union#write through an exact JsonProtocol over a MemoryBufferTransport (or a FramedTransport or BufferedTransport)
# are written natively
# (ext/thrift_native/src/struct_codec/json.rs); everything else is the library's Ruby. Compared with pure Ruby, and
# with the C accelerator's struct code (which calls the protocol's methods), each in a process of its own.
RSpec.describe "JsonProtocol struct writes, differentially" do
  runner = File.expand_path("../support/runners/json_runner.rb", __dir__)
  # Pure Ruby writes the reference bytes where the loaded thrift's pure-Ruby structs run on this Ruby (not thrift 0.19
  # on Ruby 3.3: Fixnum); else the C accelerator's struct code, which calls the same pure-Ruby protocol methods.
  let(:reference) { Accelerator.pure_structs_work? ? "pure" : "c" }

  it "writes random structs, unions inside, to the bytes the pure Ruby library writes" do
    [1, 2].each do |seed|
      bytes = [reference, "c", "ours"].uniq.to_h { |a| [a, StructRuns.run(a, "json", "write", seed, 40)] }
      expect(bytes["ours"].size).to eq(40)
      expect(bytes["ours"].sum(&:bytesize)).to be > 50_000
      expect(bytes["ours"]).to eq(bytes[reference])
      expect(bytes["c"]).to eq(bytes[reference])
    end
  end

  it "writes them through a FramedTransport and a BufferedTransport to the pure Ruby library's bytes too" do
    %w[framed buffered].each do |transport|
      bytes = [reference, "ours"].to_h { |a| [a, StructRuns.run(a, "json", "write", 4, 20, transport: transport)] }
      expect(bytes["ours"].sum(&:bytesize)).to be > 20_000
      expect(bytes["ours"]).to eq(bytes[reference]), transport
    end
  end

  it "reads what it writes back to the same objects as the C accelerator's struct code does" do
    # (Pure Ruby 0.14 differs from both: it reads a binary inside a container with read_string, as base64 text.)
    bytes = StructRuns.run("ours", "json", "write", 3, 20)
    decoded = %w[c ours].to_h { |a| [a, StructRuns.run(a, "json", "read", "Everything", input: bytes)] }
    expect(decoded["ours"]).to all(be_a(String))
    expect(decoded["ours"]).to eq(decoded["c"])
  end

  it "leaves bytes, exceptions and the protocol's contexts as pure Ruby does, around and inside structs" do
    expected = ChildRuby.marshal(runner, reference)
    ours = ChildRuby.marshal(runner, "ours")
    expect(ours.keys).to eq(expected.keys)
    expected.each { |name, outcome| expect(ours[name]).to eq(outcome), name.to_s }
    # The cases reach what they are about: contexts of the protocol's own around the struct, failures half-way with
    # the contexts they leave, and values the protocol's own methods write.
    expect(ours[:message][0]).to eq('[1,"m",1,9,{"1":{"i32":7},"2":{"str":"x"}}]')
    expect(ours[:map_value_struct][0]).to eq('["str","rec",1,{"k":{"1":{"i32":7},"2":{"str":"x"}}}]')
    expect(ours[:latin1_string][0]).to start_with('{"1":{"i32":1},"2":{"str":"caf')
    expect(ours[:big_integer][0]).to eq('{"1":{"i32":1099511627776}}1')
    %i[broken_utf8 integer_double nil_in_list validate_fails nested_validate_fails].each do |name|
      expect(ours[name][1]).not_to be_nil, name.to_s
      expect(ours[name][2][1]).not_to be_empty, "#{name} leaves the contexts it failed in"
    end
    expect(ours[:goes_on_after_an_error][0]).to end_with(",3")
    # The contexts shown to the protocol's methods are objects made mid-write: the same under GC.stress.
    expect(ChildRuby.marshal(runner, "ours", env: { "GC_STRESS" => "1" })).to eq(expected)
  end

  it "calls the protocol's Ruby methods for every struct once one of them is redefined" do
    code = <<~RUBY
      require "thrift_native"
      require #{File.expand_path("../../test_support/codec_types", __dir__).dump}
      CodecTypes.load!
      calls = []
      Thrift::JsonProtocol.prepend(Module.new { define_method(:write_i32) { |n| calls << n; super(n) } })
      t = Thrift::MemoryBufferTransport.new
      CodecTest::Leaf.new(id: 5, label: "x").write(Thrift::JsonProtocol.new(t))
      p [calls, t.read(t.available)]
    RUBY
    out, err, ok = ChildRuby.capture("-I", SpecSupport::LIB, "-e", code)
    expect([err, ok]).to eq(["", true])
    expect(out).to eq(%([[5], "{\\"1\\":{\\"i32\\":5},\\"2\\":{\\"str\\":\\"x\\"}}"]\n))
  end
end
