# frozen_string_literal: true

# A transport that is not a MemoryBufferTransport at all: only the methods the protocols call, over Strings.
# The protocols must take their dispatch path with it and give the same results.
class CustomTransport < Thrift::BaseTransport
  attr_reader :out

  def initialize(input = "".b)
    super()
    @in = input
    @out = +"".b
  end

  def write(s) = @out << s
  def read_byte = @in.slice!(0).ord
  def read_all(n) = @in.slice!(0, n)

  def read_into_buffer(buf, n)
    buf[0, n] = @in.slice!(0, n)
    n
  end
end
