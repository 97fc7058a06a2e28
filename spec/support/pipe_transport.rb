# frozen_string_literal: true

# A Ruby transport in front of a byte queue, as a socket is one: `read` answers up to the bytes asked for, EOFError
# when none remain. (Loaded after thrift.)
class PipeTransport < Thrift::BaseTransport
  def initialize(data = "".b)
    @data = data.b
  end

  def read(sz)
    raise EOFError, "pipe: no more data" if @data.empty? && sz.positive?

    @data.slice!(0, sz)
  end

  def write(buf)
    @data << buf.b
  end

  def flush; end

  def unread
    @data
  end
end
