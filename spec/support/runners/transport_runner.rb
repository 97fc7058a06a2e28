# frozen_string_literal: true

# Applies transport operations to a FramedTransport or BufferedTransport with one accelerator loaded, and prints
# what happened (Marshal on stdout): each call's result or exception, the transport's state afterwards, and every
# call the transport made on the transport beneath. Run once with pure Ruby and once with thrift_native, the two
# must agree exactly.
#   ruby transport_runner.rb c|ours|ours-ruby-layers framed|buffered|framed-subclass memory|recording|iostream
#       < {data:, ops:, flags:}
#
# ours-ruby-layers: thrift_native, with FramedTransport's and BufferedTransport's methods turned back into the Ruby
# library's (through the method_added guard, as a monkey patch does): the oracle over a MemoryBufferTransport, whose
# own methods are thrift_native's (Debian's 0.14 C accelerator's read_all consumes a short read; master's does not).
#
# data: the bytes the transport beneath holds for reading. ops: [[method, *args], ...]; [:read_into_buffer, cap, n]
# reads into a new String of `cap` zero bytes; [:freeze_buffer, ...] the same into a frozen one.

require_relative "../../../test_support/accelerator"
require_relative "outcome"
require "stringio"

accelerator = ARGV.fetch(0)
Accelerator.load(accelerator == "ours-ruby-layers" ? "ours" : accelerator)
if accelerator == "ours-ruby-layers"
  Thrift::FramedTransport.send(:alias_method, :read_frame, :read_frame)
  Thrift::BufferedTransport.send(:alias_method, :flush, :flush)
end
kind = ARGV.fetch(1)
inner_kind = ARGV.fetch(2)
require_relative "../fixtures/recording_inner"

FramedSubclass = Class.new(Thrift::FramedTransport)

data = Marshal.load($stdin.read)
inner = case inner_kind
        when "memory" then Thrift::MemoryBufferTransport.new(data.fetch(:data).dup)
        when "recording" then RecordingInner.new(data.fetch(:data))
        when "iostream" then Thrift::IOStreamTransport.new(StringIO.new(data.fetch(:data).b), StringIO.new("".b))
        end
trans = case kind
        when "framed" then Thrift::FramedTransport.new(inner, *data.fetch(:flags, []))
        when "framed-subclass" then FramedSubclass.new(inner, *data.fetch(:flags, []))
        when "buffered" then Thrift::BufferedTransport.new(inner)
        end

describe = lambda do |value|
  case value
  when String then [:string, value.b, value.encoding.name, value.frozen?]
  when Thrift::BaseTransport then [:transport, value.class.name]
  else value
  end
end

results = data.fetch(:ops).map do |name, *args|
  value = case name
          when :read_into_buffer, :freeze_buffer
            buffer = "\0".b * args[0]
            buffer.freeze if name == :freeze_buffer
            n = trans.read_into_buffer(buffer, args[1])
            [n, buffer]
          when :write_utf8
            s = +args[0]
            trans.write(s, *args[1..])
            [s.encoding.name]
          else
            trans.public_send(name, *args)
          end
  Outcome.ok(value.is_a?(Array) ? value.map(&describe) : describe.call(value))
rescue StandardError, ScriptError => e
  Outcome.failed(e, Outcome.first_line(e))
end

state = %i[@rbuf @index @wbuf].to_h { |iv| [iv, describe.call(trans.instance_variable_get(iv))] }
inner_state = case inner_kind
              when "memory" then [inner.instance_variable_get(:@buf).b, inner.instance_variable_get(:@index)]
              when "recording" then [inner.calls, inner.written]
              when "iostream" then [inner.instance_variable_get(:@output).string.b, inner.instance_variable_get(:@input).pos]
              end
$stdout.binmode
$stdout.write Marshal.dump(results: results, state: state, inner: inner_state)
