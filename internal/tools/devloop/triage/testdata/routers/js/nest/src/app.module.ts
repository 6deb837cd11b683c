import { Controller, Get, Module } from '@nestjs/common';
import { OrdersController } from './orders.controller';

@Controller('health')
export class HealthController {
  @Get()
  health(): { ok: boolean } {
    return { ok: true };
  }
}

@Module({ controllers: [HealthController, OrdersController] })
export class AppModule {}
