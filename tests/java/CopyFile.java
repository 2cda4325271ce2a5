import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

/** Copies each argument file to NAME.copy with Files.copy (the JDK's native copy). */
public class CopyFile {
    public static void main(String[] args) throws Exception {
        for (String a : args) {
            Path src = Path.of(a);
            Path dst = Path.of(a + ".copy");
            Files.copy(src, dst, StandardCopyOption.REPLACE_EXISTING);
            System.out.println(a + ": copied " + Files.size(dst) + " bytes");
        }
    }
}
