# frozen_string_literal: true

# Loads one accelerator into this process, for a spec or benchmark child process: pure Ruby, Debian's C accelerator (thrift 0.14),
# a newer C accelerator from THRIFT_MASTER_RB (an apache/thrift checkout's lib/rb whose ext/ you built), or ours.
module Accelerator
  class << self
    attr_reader :name

    # The protocol to use: BinaryProtocolAccelerated (or pure BinaryProtocol), or with PROTOCOL=compact the
    # CompactProtocol (whose methods each accelerator replaces in place).
    def protocol_class
      ENV["PROTOCOL"] == "compact" ? Thrift::CompactProtocol : @protocol_class
    end

    def load(name)
      @name = name
      case name
      when "pure"
        $LOADED_FEATURES << "thrift_native.so" # keeps thrift.rb from loading any accelerator
        require "thrift"
        @protocol_class = Thrift::BinaryProtocol
      when "c"
        require "thrift"
        abort "the C accelerator did not load" unless defined?(Thrift::BinaryProtocolAccelerated) && !defined?(ThriftNative)
        @protocol_class = Thrift::BinaryProtocolAccelerated
      when "c-master"
        dir = ENV.fetch("THRIFT_MASTER_RB")
        $LOAD_PATH.unshift File.join(dir, "lib"), File.join(dir, "ext")
        require "thrift"
        abort "the master C accelerator did not load" unless $LOADED_FEATURES.include?(File.join(dir, "ext", "thrift_native.so"))
        @protocol_class = Thrift::BinaryProtocolAccelerated
      when "ours"
        $LOAD_PATH.unshift File.expand_path("../../lib", __dir__)
        require "thrift_native"
        abort "thrift_native is not active" unless ThriftNative.active?
        @protocol_class = Thrift::BinaryProtocolAccelerated
      else
        abort "unknown accelerator #{name.inspect}: pure, c, c-master or ours"
      end
    end
  end
end
