# frozen_string_literal: true

# Applies operations to a HeaderTransport (thrift master's Ruby library, THRIFT_MASTER_RB) with one accelerator
# loaded, and prints what happened (Marshal on stdout): each call's result or exception, the transport's state
# afterwards (its ivars, the buffers' contents and positions), and every call it made on the transport beneath.
#   ruby header_runner.rb pure-master|ours-master|ours-master-ruby-header memory|recording < {data:, ops:, args:}
#
# ours-master-ruby-header: thrift_native, with HeaderTransport's methods turned back into the Ruby library's
# (through the method_added guard, as a monkey patch does): the oracle over a MemoryBufferTransport, whose methods
# are thrift_native's.
#
# data: the bytes the transport beneath holds. ops: [[method, *args], ...]; [:read_into_buffer, cap, n] reads into
# a new String of `cap` zero bytes. args: HeaderTransport.new's arguments after the transport.

require_relative "../../../test_support/accelerator"
require_relative "outcome"
require "stringio"

accelerator = ARGV.fetch(0)
Accelerator.load(accelerator == "ours-master-ruby-header" ? "ours-master" : accelerator)
Thrift::HeaderTransport.send(:alias_method, :read_frame, :read_frame) if accelerator == "ours-master-ruby-header"
inner_kind = ARGV.fetch(1)

require_relative "../fixtures/recording_inner"

data = Marshal.load($stdin.read)
inner = case inner_kind
        when "memory" then Thrift::MemoryBufferTransport.new(data.fetch(:data).dup)
        when "recording" then RecordingInner.new(data.fetch(:data))
        end
trans = Thrift::HeaderTransport.new(inner, *data.fetch(:args, []))

describe = lambda do |value|
  case value
  when String then [:string, value.b, value.encoding.name, value.frozen?]
  when StringIO then [:string_io, value.string.b, value.pos]
  when Hash then value.to_a.map { |k, v| [describe.call(k), describe.call(v)] }
  when Thrift::BaseTransport then [:transport, value.class.name]
  else value
  end
end

results = data.fetch(:ops).map do |name, *args|
  value = case name
          when :read_into_buffer
            buffer = "\0".b * args[0]
            [trans.read_into_buffer(buffer, args[1]), buffer]
          when :write_utf8
            s = +args[0]
            trans.write(s)
            [s.encoding.name]
          when :get_headers
            trans.get_headers.dup
          else
            trans.public_send(name, *args)
          end
  Outcome.ok(value.is_a?(Array) ? value.map(&describe) : describe.call(value))
rescue StandardError, ScriptError => e
  Outcome.failed(e, Outcome.first_line(e))
end

state = trans.instance_variables.sort.reject { |iv| iv == :@transport }.to_h do |iv|
  [iv, describe.call(trans.instance_variable_get(iv))]
end
inner_state = case inner_kind
              when "memory" then [inner.instance_variable_get(:@buf).b, inner.instance_variable_get(:@index)]
              when "recording" then [inner.calls, inner.written]
              end
$stdout.binmode
$stdout.write Marshal.dump(results: results, state: state, inner: inner_state)
