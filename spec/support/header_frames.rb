# frozen_string_literal: true

require "zlib"

# THeader messages for specs, built by hand (the installed thrift has no HeaderTransport): header frames with info
# headers and the ZLIB transform, legacy framed and unframed binary and compact messages, and damaged ones; and the
# reverse, a stream of header frames decoded into their fields with ZLIB payloads inflated.
module HeaderFrames
  MAGIC = 0x0FFF

  module_function

  def varint(n)
    out = +"".b
    loop do
      return out << n if n < 0x80

      out << ((n & 0x7f) | 0x80)
      n >>= 7
    end
  end

  def varstring(s)
    varint(s.bytesize) + s.b
  end

  # A header frame, length included. `headers`: [[key, value], ...]; `zlib`: payload deflated and the transform
  # listed; `transforms` overrides the listed ids.
  def header(payload, flags: 0, seq: 0, protocol: 0, headers: [], zlib: false, transforms: nil)
    transforms ||= zlib ? [1] : []
    block = varint(protocol) + varint(transforms.size) + transforms.map { |t| varint(t) }.join.b
    block << varint(1) + varint(headers.size) + headers.map { |k, v| varstring(k) + varstring(v) }.join.b unless headers.empty?
    block << "\0" * ((4 - (block.bytesize % 4)) % 4)
    body = zlib ? Zlib::Deflate.deflate(payload) : payload.b
    frame = [MAGIC, flags, seq & 0xffffffff, block.bytesize / 4].pack("nnNn") + block + body
    [frame.bytesize].pack("N") + frame
  end

  def framed(payload)
    [payload.bytesize].pack("N") + payload.b
  end

  # A binary (strict, version 1) or compact message start followed by `rest`.
  def binary_message(rest)
    "\x80\x01\x00\x01".b + rest.b
  end

  def compact_message(rest)
    "\x82\x21".b + rest.b
  end

  # A random message of any client type, sometimes damaged: a flipped byte, or cut short.
  def random_message(r)
    payload = r.bytes(r.rand(0..30))
    message = case r.rand(10)
              when 0..3
                header(payload, flags: r.rand(0..0xffff), seq: r.rand(-2**31...2**31), protocol: [0, 2, 2, r.rand(0..300)].sample(random: r),
                                headers: Array.new(r.rand(0..3)) { [r.bytes(r.rand(0..4)), r.bytes(r.rand(0..6))] },
                                zlib: r.rand(4).zero?)
              when 4 then framed(binary_message(payload))
              when 5 then framed(compact_message(payload))
              when 6 then binary_message(payload)
              when 7 then compact_message(payload)
              when 8 then header(payload, transforms: [r.rand(2..9)])
              else r.bytes(r.rand(4..12))
              end
    case r.rand(8)
    when 0 then message.setbyte(r.rand(message.bytesize), r.rand(256))
    when 1 then message = message[0, r.rand(message.bytesize)]
    end
    message
  end

  # A stream of frames (or anything) decoded: header frames as their fields with ZLIB payloads inflated; the rest
  # (and anything after a frame that does not parse) as bytes.
  def decode(stream)
    out = []
    pos = 0
    while pos + 4 <= stream.bytesize
      size = stream[pos, 4].unpack1("N")
      frame = stream[pos + 4, size]
      break unless frame && frame.bytesize == size && size >= 10 && frame.unpack1("n") == MAGIC

      out << decode_header(frame)
      pos += 4 + size
    end
    out << stream[pos..] if pos < stream.bytesize
    out
  end

  def decode_header(frame)
    flags, seq, words = frame.unpack("x2nNn")
    block = frame[10, words * 4]
    payload = frame[10 + words * 4..]
    io = StringIO.new(block)
    read_varint = lambda do
      n = shift = 0
      loop do
        b = io.getbyte
        n |= (b & 0x7f) << shift
        return n if b < 0x80

        shift += 7
      end
    end
    protocol = read_varint.call
    transforms = Array.new(read_varint.call) { read_varint.call }
    payload = Zlib::Inflate.inflate(payload) if transforms.include?(1)
    [:header, flags, seq, protocol, transforms, io.read, payload]
  end
end
