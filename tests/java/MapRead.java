import java.io.FileInputStream;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * Reads a file through memory mappings (NIO's FileChannel and a FileInputStream's channel,
 * a whole-file and an offset map) and copies it into `out` through one, as libraries with a
 * mapped fast path do.
 */
public class MapRead {
    public static void main(String[] args) throws Exception {
        Path in = Path.of(args[0]);
        try (FileChannel ch = FileChannel.open(in, StandardOpenOption.READ)) {
            MappedByteBuffer m = ch.map(FileChannel.MapMode.READ_ONLY, 0, ch.size());
            byte[] all = new byte[m.remaining()];
            m.get(all);
            System.out.println("nio " + new String(all, StandardCharsets.UTF_8).trim());
            MappedByteBuffer tail = ch.map(FileChannel.MapMode.READ_ONLY, 6, 5);
            byte[] t = new byte[5];
            tail.get(t);
            System.out.println("offset " + new String(t, StandardCharsets.UTF_8));
        }
        try (FileInputStream fis = new FileInputStream(in.toFile())) {
            FileChannel ch = fis.getChannel();
            MappedByteBuffer m = ch.map(FileChannel.MapMode.READ_ONLY, 0, ch.size());
            byte[] all = new byte[m.remaining()];
            m.get(all);
            all[0] = (byte) 'H';
            Files.write(Path.of(args[1]), all);
            System.out.println("copied " + all.length);
        }
    }
}
