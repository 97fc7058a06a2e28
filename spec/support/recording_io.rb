# frozen_string_literal: true

# An io that records every call: [:write, bytesize] / [:flush] / [:close], and keeps the bytes.
class RecordingIO
  attr_reader :calls, :data, :strings

  def initialize
    @calls = []
    @data = "".b
    @strings = []
  end

  def write(*strs)
    strs.each do |s|
      @calls << [:write, s.bytesize]
      @strings << s
      @data << s
    end
    strs.sum(&:bytesize)
  end

  def flush
    @calls << [:flush]
    self
  end

  def close
    @calls << [:close]
    nil
  end

  def kinds
    calls.map(&:first)
  end
end

# An io that allocates nothing per write: counts calls and bytes.
class CountingIO
  attr_reader :count, :bytes

  def initialize
    @count = 0
    @bytes = 0
  end

  def write(str)
    @count += 1
    @bytes += str.bytesize
  end
end
