# frozen_string_literal: true

require "stringio"

# ThriftNative.explain: which path a protocol's structs, reads and writes take, from the checks the fast paths make.
RSpec.describe "ThriftNative.explain" do
  let(:memory) { Thrift::MemoryBufferTransport.new }

  def explain(prot) = ThriftNative.explain(prot)

  it "calls the plain BinaryProtocol over a memory buffer fast, in place both ways" do
    e = explain(Thrift::BinaryProtocol.new(memory))
    expect(e).to be_fast
    expect(e.structs).to include("natively", "binary")
    expect(e.reads).to include("in place", "@buf")
    expect(e.notes).to be_empty
    expect(e.to_s.lines.first).to eq("Thrift::BinaryProtocol over Thrift::MemoryBufferTransport: fast\n")
  end

  it "names the buffers of the Framed, Buffered, HTTP client and IO stream transports" do
    http = Thrift::HTTPClientTransport.new("http://localhost:1/")
    http.instance_variable_set(:@inbuf, StringIO.new("x".b))
    cases = {
      Thrift::FramedTransport.new(memory) => %w[@rbuf @wbuf],
      Thrift::BufferedTransport.new(memory) => %w[@rbuf @wbuf],
      http => %w[@inbuf @outbuf],
      Thrift::IOStreamTransport.new(StringIO.new(+""), StringIO.new(+"")) => %w[@input @output]
    }
    cases.each do |trans, (read, write)|
      [Thrift::BinaryProtocol, Thrift::BinaryProtocolAccelerated, Thrift::CompactProtocol].each do |klass|
        e = explain(klass.new(trans))
        expect(e).to be_fast, "#{klass} over #{trans.class}: #{e}"
        expect([e.reads, e.writes]).to match([include(read), include(write)])
      end
    end
  end

  it "says why a side is not in place: no response yet, an input that is not a StringIO, an unknown transport" do
    http = explain(Thrift::BinaryProtocol.new(Thrift::HTTPClientTransport.new("http://localhost:1/")))
    expect(http).not_to be_fast
    expect(http.reads).to include("Ruby methods")
    expect(http.writes).to include("@outbuf")
    expect(http.notes).to include(a_string_including("no response yet"))

    io = explain(Thrift::BinaryProtocol.new(Thrift::IOStreamTransport.new($stdin, StringIO.new(+""))))
    expect(io.notes).to include(a_string_including("its input (IO) is not a StringIO"))
    expect(io.writes).to include("@output")

    custom = explain(Thrift::BinaryProtocol.new(CustomTransport.new))
    expect(custom.notes).to include(a_string_including("no fast path reads or writes in place"))
    expect(custom.structs).to include("natively")
  end

  it "names the methods a subclass defines, and a subclass of a transport" do
    sub = Class.new(Thrift::BinaryProtocol) { def read_i32 = super }
    stub_const("MyProtocol", sub)
    e = explain(MyProtocol.new(memory))
    expect(e).not_to be_fast
    expect(e.structs).to include("dispatch")
    expect(e.notes).to include("MyProtocol is a subclass of Thrift::BinaryProtocol: only exact instances are served natively (it defines read_i32)")

    stub_const("MyFramed", Class.new(Thrift::FramedTransport))
    f = explain(Thrift::BinaryProtocol.new(MyFramed.new(memory)))
    expect(f.notes).to include(a_string_including("MyFramed is a subclass of Thrift::FramedTransport"))
  end

  it "sees through a MultiplexedProtocol that only passes the calls on" do
    e = explain(Thrift::MultiplexedProtocol.new(Thrift::BinaryProtocol.new(memory), "Svc"))
    expect(e).to be_fast
    expect(e.protocol).to be_a(Thrift::BinaryProtocol)
    expect(e.notes).to include(a_string_including("seen through Thrift::MultiplexedProtocol"))
  end
end
