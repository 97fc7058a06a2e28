# frozen_string_literal: true

# FramedTransport and BufferedTransport over Thrift::Socket and Thrift::UNIXSocket (transports/socket.rs serves the
# calls they make on the socket): pure Ruby, the C accelerator and ours, each in its own process over the same cases
# (spec/support/runners/socket_runner.rb): what the calls answer or raise (class, message, type, cause), what is left
# of `@handle`, and the IO methods called on the handle in order, for reads, writes, a peer that closes mid-frame or
# mid-header, a reset, a broken pipe, a socket closed at either end, timeouts, a subclass and a handle double.
RSpec.describe "Transports over Thrift::Socket, differentially" do
  script = File.expand_path("../support/runners/socket_runner.rb", __dir__)
  # Cases the native calls serve (no timeout, exact classes, IO handles) and cases that must keep the Ruby methods.
  native = ["framed: two frames, read in pieces", "framed: the peer closes mid-frame", "buffered: reads",
            "framed: a frame and part of the next in one write, then the rest",
            "framed: after a frame, the handle read directly",
            "framed: frames after a large one, a frozen @rbuf, slices kept",
            "buffered: slices kept across refills, a frozen @rbuf",
            "framed: write and flush", "framed: flush after the peer closed", "framed over TCP: reset by the peer"]
  in_ruby = ["framed: a Socket subclass", "framed: a handle double", "framed, timed: a Rational timeout (the Ruby methods)",
             "framed, timed: read_nonblock prepended on BasicSocket (the Ruby methods)",
             "framed: readpartial prepended on UNIXSocket after a read (the Ruby methods)"]
  # Timed sockets: native on thrift master (read_nonblock and write_nonblock), the Ruby methods before.
  timed = ["framed: with a timeout", "framed, timed: a frame in two writes, the second after a pause",
           "framed, timed: write and flush, then read", "buffered, timed: reads and a write",
           "framed, timed: two frames in one write",
           accepted = "framed, timed: a ServerSocket's accepted socket"] # timed on master only

  # Everything but the socket's own Ruby methods (up to `upto`: the handle's calls are left out under GC.stress,
  # where a slow reader may find a frame written in two parts whole).
  def compare(ours, reference, label, upto: 4)
    expect(ours.map(&:first)).to eq(reference.map(&:first))
    ours.zip(reference).each do |o, r|
      o = [*o[0..3], without_writes(o[4]), *o[5..]]
      r = [*r[0..3], without_writes(r[4]), *r[5..]]
      expect(o[0..upto]).to eq(r[0..upto]), "#{o[0]}: ours #{o.inspect}\n#{label} #{r.inspect}"
    end
  end

  # Where IO#write would only copy the bytes into the handle (no conversion: ruby/io_write.rs), our flush writes them
  # with rb_io_bufwrite, which TracePoint does not see as a call: `write` is left out of both sides' calls, and
  # writes are compared by the bytes the peer reads and the errors they raise.
  # A timed read or write calls read_nonblock or write_nonblock until it is done, as often as the peer's pace makes
  # it: runs of them count as one.
  # IO#closed? of such a handle, asked before each read and write, is answered without a call (ruby/io_closed.rs):
  # `closed?` is left out too (what a closed handle raises is compared by the outcomes). A FramedTransport reads a
  # frame whose bytes are all there with one read (transports/socket/frame.rs), where the library reads its size and
  # then its bytes: consecutive reads count as one (what they read is compared by the answers).
  def without_writes(calls)
    return calls unless calls.is_a?(Array)

    (calls - %i[write closed?]).chunk_while { |a, b| a == b && %i[readpartial __read_nonblock __write_nonblock].include?(a) }
                               .map(&:first)
  end

  def check_paths(ours, native, in_ruby)
    by_name = ours.to_h { |o| [o[0], o[5]] }
    native.each { |name| expect(by_name.fetch(name) & %i[read read_all open?]).to eq([]), name }
    in_ruby.each { |name| expect(by_name.fetch(name)).to include(:read), name }
    io_calls = ours.to_h { |o| [o[0], o[4]] }
    # Written without IO#write, and with it where the handle converts.
    ["framed: write and flush", "framed: a large frame", "buffered: write and flush"].each do |name|
      expect(io_calls.fetch(name)).not_to include(:write), name
    end
    ["framed: a handle that converts what it writes", "buffered: a handle that converts what it writes"].each do |name|
      expect(io_calls.fetch(name)).to include(:write), name
    end
  end

  it "answers, raises and calls the handle as the library does (the loaded thrift)" do
    runs = %w[pure c ours].to_h { |a| [a, ChildRuby.marshal(script, a)] }
    master = Thrift::Socket.private_method_defined?(:close_socket)
    expect(runs["ours"].size).to be >= 31
    compare(runs["ours"], runs["pure"], "pure")
    compare(runs["ours"], runs["c"], "c")
    check_paths(runs["ours"], native, in_ruby + (master ? [] : timed - [accepted]))
    errors = runs["ours"].select { |o| o[1][0] == :error }
    # A closed socket raises IOError before master (which raises a TransportException, and has close_socket).
    closed_stream = Thrift::Socket.private_method_defined?(:close_socket) ? [] : ["IOError"]
    expect(errors.map { |o| o[1][1] }.uniq).to contain_exactly("Thrift::TransportException", *closed_stream)
    expect(errors.filter_map { |o| o[2]&.first }.uniq).to include("EOFError", "Errno::EPIPE", "Errno::ECONNRESET")
  end

  it "answers, raises and calls the handle as thrift master's library does (THRIFT_MASTER_RB)" do
    env = thrift_master_env
    runs = %w[pure-master c-master ours-master].to_h { |a| [a, ChildRuby.marshal(script, a, env: env)] }
    compare(runs["ours-master"], runs["pure-master"], "pure-master")
    compare(runs["ours-master"], runs["c-master"], "c-master")
    check_paths(runs["ours-master"], native + timed, in_ruby)
    timeouts = runs["ours-master"].select { |o| o[1][0] == :error && o[1][3] == Thrift::TransportException::TIMED_OUT }
    expect(timeouts.map { |o| [o[0], o[1][2], o[3]] }).to contain_exactly(
      ["framed, timed: the frame's rest never comes", "Socket: Timed out reading 64 bytes from localhost:9090", :nil], # 36 of the 100 came,
      ["framed, timed: a write the peer never reads",
       "Socket: Timed out writing 3000004 bytes to localhost:9090", :nil],
      ["framed: a timeout that expires", "Socket: Timed out reading 4 bytes from localhost:9090", :nil]
    )
    # The timed paths under GC stress.
    stressed = ChildRuby.marshal(script, "ours-master", env: env.merge("GC_STRESS" => "1"))
    compare(stressed, runs["c-master"], "c-master", upto: 3)
    closed = runs["ours-master"].find { |o| o[0] == "framed: the socket closed (handle nil)" }
    expect(closed[1]).to eq([:error, "Thrift::TransportException", "closed stream", 1])
  end

  it "gives the same outcomes under GC.stress" do
    stressed = ChildRuby.marshal(script, "ours", env: { "GC_STRESS" => "1" })
    compare(stressed, ChildRuby.marshal(script, "c"), "c", upto: 3)
  end
end
