# frozen_string_literal: true

require_relative "../support/fixtures/header_frames"

# Struct encoding and decoding by pure Ruby, the installed C accelerator (Debian's thrift 0.14) and thrift_native,
# each in its own process, over the same random instances of every type.
RSpec.describe "Struct read/write, differentially" do
  def runner(accelerator, *args, input: nil)
    StructRuns.run(accelerator, protocol, *args, input: input)
  end

  # plain: Thrift::BinaryProtocol (the C accelerator's struct code calling the pure-Ruby protocol's methods; ours
  # natively).
  %w[binary plain compact].each do |protocol_name|
    context "with the #{protocol_name} protocol" do
      let(:protocol) { protocol_name }

    # Pure Ruby too, where the loaded thrift's pure-Ruby structs work on this Ruby.
    let(:references) { Accelerator.pure_structs_work? ? %w[pure c] : %w[c] }

    it "encodes random instances to identical bytes" do
      bytes = (references + %w[ours]).to_h { |a| [a, runner(a, "write", 2024, 40)] }
      expect(bytes["ours"].size).to eq(40)
      references.each { |a| expect(bytes["ours"]).to eq(bytes[a]), "ours vs #{a}" }
    end

    it "decodes the same bytes to the same objects" do
      bytes = runner("c", "write", 77, 40)
      decoded = (references + %w[ours]).to_h { |a| [a, runner(a, "read", "Everything", input: bytes)] }
      expect(decoded["ours"]).to all(be_a(String))
      references.each { |a| expect(decoded["ours"]).to eq(decoded[a]), "ours vs #{a}" }
    end

    it "gives decoded structs the C accelerator's ivar order (the same object shape), nested, unions included" do
      bytes = runner("c", "write", 78, 30)
      shapes = %w[c ours].to_h { |a| [a, runner(a, "shapes", "Everything", input: bytes)] }
      expect(shapes["ours"].flatten).to include(:@defaults, :@setfield)
      expect(shapes["ours"]).to eq(shapes["c"])
    end

    it "fails on the same malformed inputs with the same exceptions as the C accelerator" do
      r = Random.new(5)
      valid = runner("ours", "write", 5, 10)
      mutated = valid.flat_map do |b|
        [b.byteslice(0, r.rand(b.bytesize)),                                    # truncated
         b.dup.tap { |m| m.setbyte(r.rand(m.bytesize), r.rand(256)) },          # one byte overwritten
         b.dup.tap { |m| i = r.rand(m.bytesize); m.setbyte(i, m.getbyte(i) ^ (1 << r.rand(8))) }] # one bit flipped
      end
      ours = runner("ours", "read", "Everything", input: mutated)
      c = runner("c", "read", "Everything", input: mutated)
      # The same value, or the same exception, message and type, but for the refusals kept on every version.
      ours.zip(c, mutated).each do |o, cc, input|
        next if SpecSupport.safe_refusal?(o, cc)

        expect(o).to eq(cc), "input #{input.unpack1("H*")}"
      end
    end

    it "makes the same protocol calls as the C accelerator on the dispatch path" do
      [3, 4].each do |seed|
        ours = runner("ours", "calls", seed)
        c = runner("c", "calls", seed)
        expect(ours[0]).to eq(c[0])
        expect(ours[1]).to eq(c[1])
        expect(ours[0].size).to be > 20
      end
    end
    end
  end

  # Through a MultiplexedProtocol or a StoredMessageProtocol (over a memory buffer or a FramedTransport), which the
  # fast paths see through where the decorator only passes the calls on: the same bytes, the same objects, the same
  # exceptions for damaged input, as the C accelerator (whose every call goes through the decorator) and through a
  # subclass of the decorator (our dispatch path, through the decorator's methods).
  %w[binary compact json].product(%w[multiplexed stored], %w[memory framed]).each do |protocol_name, decorator, transport|
    context "with the #{protocol_name} protocol through a #{decorator} decorator over #{transport}" do
      def run_on(accelerator, *args, **options)
        StructRuns.run(accelerator, protocol, *args, transport: transport, decorator: decorator, **options)
      end

      let(:protocol) { protocol_name }
      let(:transport) { transport }
      let(:decorator) { decorator }

      it "writes identical bytes and reads them back identically, on both paths, damaged input too" do
        bytes = %w[c ours].to_h { |a| [a, run_on(a, "write", 41, 12)] }
        expect(bytes["ours"]).to eq(bytes["c"])
        expect(run_on("ours", "write", 41, 12, dispatch: true)).to eq(bytes["c"])
        r = Random.new(42)
        inputs = bytes["c"] + bytes["c"].map { |b| b.byteslice(0, r.rand(b.bytesize)) }
        decoded = run_on("ours", "read", "Everything", input: inputs)
        expect(decoded.first(12)).to all(be_a(String))
        expect(decoded).to eq(run_on("c", "read", "Everything", input: inputs))
        expect(run_on("ours", "read", "Everything", input: inputs, dispatch: true)).to eq(decoded)
      end
    end
  end

  # Over FramedTransport (a MemoryBufferTransport or a Ruby transport beneath) and BufferedTransport (a Ruby transport
  # beneath), whose buffers thrift_native reads and writes in place: the same bytes, the same objects read one after
  # another from one stream (refills falling anywhere, mid-struct included), the same dispatch-path calls.
  %w[binary plain compact].product(%w[framed framed-pipe buffered]).each do |protocol_name, transport|
    context "with the #{protocol_name} protocol over #{transport}" do
      def run_on(accelerator, *args, **options)
        StructRuns.run(accelerator, protocol, *args, transport: transport, **options)
      end

      let(:protocol) { protocol_name }
      let(:transport) { transport }

      it "writes identical bytes and reads a stream of structs back identically, on both paths" do
        bytes = %w[c ours].to_h { |a| [a, run_on(a, "write", 99, 25)] }
        expect(bytes["ours"]).to eq(bytes["c"])
        stream = bytes["c"].join
        decoded = run_on("ours", "read-stream", "Everything", 25, input: stream)
        expect(decoded[0...-1]).to all(be_a(String))
        expect(Outcome.class_name(decoded.last)).to match(/EOFError|TransportException/)
        expect(decoded).to eq(run_on("c", "read-stream", "Everything", 25, input: stream))
        expect(run_on("ours", "read-stream", "Everything", 25, input: stream, dispatch: true)).to eq(decoded)
      end

      it "makes the same protocol calls as the C accelerator on the dispatch path" do
        ours = run_on("ours", "calls", 3)
        expect(ours).to eq(run_on("c", "calls", 3))
        expect(ours[1].size).to be > 20
      end
    end
  end

  # Over an IOStreamTransport's StringIOs (a Rack or Thin request body, a servlet's answer) and an
  # HTTPClientTransport's request buffer and response, which thrift_native reads and writes in place: the same bytes,
  # the same objects read one after another, the same errors at the end of the input (an HTTP response's EOF with its
  # status, on thrift master), and the StringIO left at the same position.
  %w[binary plain compact].product(%w[iostream http]).each do |protocol_name, transport|
    context "with the #{protocol_name} protocol over #{transport}" do
      def run_on(accelerator, *args, **options)
        StructRuns.run(accelerator, protocol, *args, transport: transport, **options)
      end

      let(:protocol) { protocol_name }
      let(:transport) { transport }

      it "writes identical bytes and reads a stream of structs back identically, a cut one too, on both paths" do
        bytes = %w[c ours].to_h { |a| [a, run_on(a, "write", 99, 12)] }
        expect(bytes["ours"]).to eq(bytes["c"])
        stream = bytes["c"].join
        cut = stream.byteslice(0, stream.bytesize - 7)
        [stream, cut].each do |input|
          decoded = run_on("ours", "read-stream", "Everything", 12, input: input)
          expect(decoded[0...11]).to all(be_a(String))
          expect(decoded).to eq(run_on("c", "read-stream", "Everything", 12, input: input))
          expect(run_on("ours", "read-stream", "Everything", 12, input: input, dispatch: true)).to eq(decoded)
        end
      end
    end
  end
end

# Through thrift master's HeaderProtocol over a HeaderTransport (THRIFT_MASTER_RB), with its binary (the pure-Ruby
# BinaryProtocol) or compact sub-protocol, plain and with the ZLIB transform: thrift_native reads and writes the
# sub-protocol's encoding in the header transport's buffers; master's C accelerator calls HeaderProtocol's methods
# for every value. The same bytes (ZLIB ones too: both use the system zlib), the same objects and exceptions, the
# same dispatch-path calls.
RSpec.describe "Struct read/write through HeaderProtocol, differentially (thrift master)" do
  before do
    skip "THRIFT_MASTER_RB (an apache/thrift checkout's lib/rb, its ext/ built) is not set" if ENV.fetch("THRIFT_MASTER_RB", "").empty?
  end

  %w[binary compact].product(%w[header header-zlib]).each do |protocol_name, transport|
    context "with the #{protocol_name} sub-protocol over #{transport}" do
      def run_on(accelerator, *args, **options)
        StructRuns.run(accelerator, protocol, *args, transport: transport, **options)
      end

      let(:protocol) { protocol_name }
      let(:transport) { transport }

      it "writes the same frames, and reads a stream of them back identically on both paths" do
        bytes = %w[c-master ours-master].to_h { |a| [a, run_on(a, "write", 99, 25)] }
        expect(bytes["ours-master"]).to eq(bytes["c-master"])
        expect(HeaderFrames.decode(bytes["ours-master"].join).size).to eq(25)
        stream = bytes["c-master"].join
        ours = run_on("ours-master", "read-stream", "Everything", 25, input: stream)
        expect(ours[0...-1]).to all(be_a(String))
        expect(Outcome.class_name(ours.last)).to eq("Thrift::TransportException")
        expect(ours).to eq(run_on("c-master", "read-stream", "Everything", 25, input: stream))
        expect(run_on("ours-master", "read-stream", "Everything", 25, input: stream, dispatch: true)).to eq(ours)
      end

      it "fails on the same damaged frames with the same exceptions as master's C accelerator" do
        r = Random.new(6)
        valid = run_on("c-master", "write", 6, 12)
        mutated = valid.flat_map do |b|
          [b.byteslice(0, r.rand(b.bytesize)),
           b.dup.tap { |m| m.setbyte(r.rand(m.bytesize), r.rand(256)) },
           b.dup.tap { |m| i = r.rand(14...m.bytesize); m.setbyte(i, m.getbyte(i) ^ (1 << r.rand(8))) }]
        end
        ours = run_on("ours-master", "read", "Everything", input: mutated)
        expect(ours).to eq(run_on("c-master", "read", "Everything", input: mutated))
        expect(ours.count { |o| Outcome.error?(o) }).to be > 10
      end

      it "makes the same protocol calls as master's C accelerator on the dispatch path" do
        ours = run_on("ours-master", "calls", 3)
        c = run_on("c-master", "calls", 3)
        expect(ours[0]).to eq(c[0])
        expect(ours[1]).to eq(c[1])
        expect(ours[1].size).to be > 20
      end
    end
  end
end
