# frozen_string_literal: true

# A transport beneath that records every call made on it: `read` answers up to the bytes asked for (a short read
# when fewer remain, EOFError when none do), `write` keeps the bytes. For the transport runners, once thrift is
# loaded.
class RecordingInner < Thrift::BaseTransport
  attr_reader :calls, :written

  def initialize(data)
    @data = data.b
    @calls = []
    @written = "".b
  end

  def read(sz)
    @calls << [:read, sz]
    raise EOFError, "recording: no more data" if @data.empty? && sz.positive?

    @data.slice!(0, sz)
  end

  def read_all(size)
    @calls << [:read_all, size]
    super
  end

  def write(buf)
    @calls << [:write, buf.bytesize, buf.encoding.name]
    @written << buf
  end

  def flush
    @calls << [:flush]
    :flushed
  end
end
