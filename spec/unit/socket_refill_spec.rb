# frozen_string_literal: true

require "socket"

# FramedTransport and BufferedTransport refilling from a plain Thrift::Socket read the socket into their spent `@rbuf`
# (transports/layered/mod.rs, spent_rbuf): no String per frame or refill; flushing to one, they keep their `@wbuf`
# (renewed_wbuf): no String per message. What they answer and call is compared with
# the library's in spec/integration/socket_transport_spec.rb; here, the allocations, and what a failed frame leaves.
RSpec.describe "Refills from a Thrift::Socket" do
  def frame(bytes) = [bytes.bytesize].pack("N") + bytes.b

  def socket_pair
    ours, peer = UNIXSocket.pair
    socket = Thrift::Socket.new
    socket.handle = ours
    [socket, peer]
  end

  after { [@socket&.handle, @peer].compact.each { |io| io.close unless io.closed? } }

  it "reads a new frame into the spent @rbuf: nothing allocated per frame" do
    @socket, @peer = socket_pair
    trans = Thrift::FramedTransport.new(@socket)
    @peer.write(frame("x" * 200) * 20)
    trans.read(200)
    # Two frames per measurement (allocations runs its block twice); each read_all is served by the frame it reads.
    objects = allocations { 200.times { trans.read_byte } }
    expect(objects).to eq(0)
    # A short slice of a frame is a String of its own (the library's `@rbuf.slice`).
    expect(allocations { trans.read(10) }).to eq(1)
  end

  # transports/socket/frame.rs: where the handle's read buffer is empty, the first read asks for up to 8 KiB, which
  # holds the size and a frame that came whole (a request or a reply); the library reads the size, then the frame.
  it "reads a frame that came whole with its size: one readpartial, nothing allocated" do
    @socket, @peer = socket_pair
    trans = Thrift::FramedTransport.new(@socket)
    message = frame("m" * 100).freeze
    @peer.write(message)
    expect(trans.read(100)).to eq("m" * 100)
    reads = 0
    trace = TracePoint.new(:c_call) { |tp| reads += 1 if tp.method_id == :readpartial }
    objects = allocations do
      @peer.syswrite(message) # (IO#write allocates an object per call from Ruby 3.3 on; the peer's is not measured)
      trace.enable { 100.times { trans.read_byte } }
    end
    expect(objects).to eq(0)
    expect(reads).to eq(2) # one per frame; `allocations` runs the block twice
  end

  it "hands the bytes of the next frame that came with one back to the handle, which reads them first" do
    @socket, @peer = socket_pair
    trans = Thrift::FramedTransport.new(@socket)
    @peer.write(frame("one") + frame("two") + "raw")
    expect(trans.read(3)).to eq("one")
    expect(@socket.handle.read_nonblock(100)).to eq(frame("two") + "raw")
    @peer.write(frame("three") + frame("fo"))
    expect([trans.read(5), trans.read(2)]).to eq(%w[three fo])
    @peer.write(frame("x" * 10_000))
    expect(trans.read(10_000)).to eq("x" * 10_000) # larger than the first read: the rest read as read_all reads it
  end

  it "keeps a spent @rbuf that is frozen or large, and reads into a new String then" do
    @socket, @peer = socket_pair
    trans = Thrift::FramedTransport.new(@socket)
    @peer.write(frame("a" * 100_000) + frame("b" * 10) + frame("c" * 10))
    large = trans.read(100_000)
    expect(large).to eq("a" * 100_000)
    spent = trans.instance_variable_get(:@rbuf)
    expect(trans.read(10)).to eq("b" * 10)
    expect(trans.instance_variable_get(:@rbuf)).not_to equal(spent)
    frozen = trans.instance_variable_get(:@rbuf).freeze
    expect(trans.read(10)).to eq("c" * 10)
    expect(trans.instance_variable_get(:@rbuf)).not_to equal(frozen)
    expect(frozen).to eq("b" * 10)
  end

  it "refills a BufferedTransport into its spent @rbuf: nothing allocated per refill" do
    @socket, @peer = socket_pair
    trans = Thrift::BufferedTransport.new(@socket)
    @peer.write("0123456789".b * 10_000)
    trans.read_byte
    objects = allocations { 5000.times { trans.read_byte } } # crosses two refills of 4096 bytes
    expect(objects).to eq(0)
    expect(trans.read(10).encoding).to eq(Encoding::BINARY)
  end

  # The other side: a flush to a plain socket hands @wbuf to no Ruby code, so it is emptied and kept (README,
  # "Deliberate differences": what a caller kept of it reads empty, where the library's still holds the bytes).
  [Thrift::FramedTransport, Thrift::BufferedTransport].each do |klass|
    it "#{klass.name.split("::").last}: a flush to a plain socket keeps @wbuf, emptied: no String per message" do
      @socket, @peer = socket_pair
      trans = klass.new(@socket)
      message = "m".b * 100
      trans.write(message)
      trans.flush
      wbuf = trans.instance_variable_get(:@wbuf)
      objects = allocations do
        trans.write(message)
        trans.flush
      end
      expect(objects).to eq(0)
      expect(trans.instance_variable_get(:@wbuf)).to equal(wbuf)
      expect([wbuf, wbuf.encoding, wbuf.frozen?]).to eq(["", Encoding::BINARY, false])
      framing = klass == Thrift::FramedTransport ? [100].pack("N") : ""
      expect(@peer.read((framing.bytesize + 100) * 3)).to eq((framing + message) * 3)
    end

    it "#{klass.name.split("::").last}: a frozen @wbuf, or one a transport's write was handed, is replaced" do
      @socket, @peer = socket_pair
      trans = klass.new(@socket)
      trans.write("abc")
      kept = trans.instance_variable_get(:@wbuf).freeze
      trans.flush
      expect(trans.instance_variable_get(:@wbuf)).not_to equal(kept)
      expect(kept).to eq("abc")
      # A Ruby transport beneath: BufferedTransport hands it @wbuf itself, which it may keep.
      seen = []
      beneath = Class.new(Thrift::BaseTransport) { define_method(:write) { |s| seen << s } }.new
      buffered = Thrift::BufferedTransport.new(beneath)
      buffered.write("xyz")
      buffered.flush
      expect(seen).to eq(["xyz"])
      expect(buffered.instance_variable_get(:@wbuf)).not_to equal(seen[0])
    end
  end

  # The one difference from the library (README, "Deliberate differences"): its @rbuf still holds the previous
  # frame, with @index 0 already, so a read after the failure answers those stale bytes; ours holds nothing, and the
  # next read asks the (now closed) socket for a frame.
  it "leaves no stale frame behind after a frame that failed half-way" do
    @socket, @peer = socket_pair
    trans = Thrift::FramedTransport.new(@socket)
    @peer.write(frame("first-frame") + frame("q" * 100)[0, 40])
    @peer.close
    expect(trans.read(11)).to eq("first-frame")
    expect { trans.read(1) }.to raise_error(Thrift::TransportException, "end of file reached")
    expect(trans.instance_variable_get(:@rbuf)).to eq("")
    expect(trans.instance_variable_get(:@index)).to eq(0)
    closed = Thrift::Socket.private_method_defined?(:close_socket) ? Thrift::TransportException : IOError
    expect { trans.read(5) }.to raise_error(closed, "closed stream")
  end
end
